#include "config/yaml_io.h"

#include "core/errors.h"
#include "core/input_file.h"

namespace biaslab {
namespace fs = std::filesystem;

namespace {

// Counts the values of `node` as a reader sees them (an alias counts as often as it is
// used), stopping at the limit: a few lines of nested aliases can stand for billions.
void count_values(const YAML::Node& node, size_t& left, const std::string& file) {
  if (left == 0)
    throw ConfigError(file + ": the YAML expands to more than " + std::to_string(kMaxYamlValues) +
                      " values (nested aliases?); config and sweep files are limited to that");
  --left;
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      count_values(it->first, left, file);
      count_values(it->second, left, file);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) count_values(item, left, file);
  }
}

}  // namespace

std::string yaml_value_text(const YAML::Node& node, const std::string& null_text) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsNull()) return null_text;
  YAML::Emitter e;
  e << YAML::Flow << node;
  return e.c_str();
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::ParserException& ex) {
    throw ConfigError(file + ":" + std::to_string(ex.mark.line + 1) + ": YAML syntax error: " +
                      ex.msg);
  } catch (const YAML::Exception& ex) {
    throw ConfigError(file + ": unreadable YAML: " + ex.msg);
  }
  size_t left = kMaxYamlValues;
  count_values(node, left, file);
  return node;
}

std::string read_config_text(const fs::path& path, const std::string& what) {
  try {
    return read_input_file(path, kMaxConfigFileBytes, what);
  } catch (const Error& e) {
    throw ConfigError(what + ": " + e.what());
  }
}

YAML::Node read_yaml_file(const fs::path& path, const std::string& what) {
  return parse_yaml(read_config_text(path, what), path.string());
}

}  // namespace biaslab
