#include "config/flat.h"

#include "config/yaml_io.h"
#include "core/errors.h"

namespace biaslab::config_detail {

std::string show(const YAML::Node& node) { return yaml_value_text(node, "null"); }

[[noreturn]] void fail(const Entry& e, const std::string& key, const std::string& message) {
  throw ConfigError(e.where() + ": " + key + ": " + message);
}

std::string where_or_default(const Flat& merged, const std::string& key) {
  auto it = merged.find(key);
  return it == merged.end() ? "(default)" : it->second.where();
}

}  // namespace biaslab::config_detail
