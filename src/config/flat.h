#pragma once
// The merged layers of a config, inside config/: every value of the preset files, the
// experiment file and --set under its dotted key ("model.depth"), remembering where it
// came from (file:line or the --set text) for messages.
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>
#include <vector>

namespace biaslab::config_detail {

inline const std::vector<std::string> kSections = {"model", "data", "optim", "sched", "train", "runtime"};

struct Entry {
  YAML::Node node;
  std::string file;  // file name, or the --set text
  int line = -1;     // 1-based; -1 for --set
  std::string where() const { return line > 0 ? file + ":" + std::to_string(line) : file; }
};
using Flat = std::map<std::string, Entry>;

/// A value as the user wrote it, for messages.
std::string show(const YAML::Node& node);
/// ConfigError "WHERE: KEY: MESSAGE".
[[noreturn]] void fail(const Entry& e, const std::string& key, const std::string& message);
/// Where `key`'s value came from; "(default)" when no layer set it.
std::string where_or_default(const Flat& merged, const std::string& key);

}  // namespace biaslab::config_detail
