#pragma once
// Reading YAML documents with biaslab's bounds (for config/ and sweep/spec.cpp, the only
// places that include yaml-cpp, with config/flat.h): a file must be a regular file of at
// most kMaxConfigFileBytes, and its document at most kMaxYamlValues values once aliases
// are expanded. Violations and syntax errors are ConfigErrors naming the file (and line).
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace biaslab {

/// Values (scalars, sequences, mappings; an alias counted each time it is used) a YAML
/// document may hold.
inline constexpr size_t kMaxYamlValues = 200000;

/// Parses `text` (from `file`, for messages).
YAML::Node parse_yaml(const std::string& text, const std::string& file);

/// Reads and parses `path`; `what` says what it is ("config file", "sweep file", ...).
YAML::Node read_yaml_file(const std::filesystem::path& path, const std::string& what);

/// A value as text for messages and overrides: scalars as written, sequences and mappings
/// in YAML's flow style, null as `null_text`.
std::string yaml_value_text(const YAML::Node& node, const std::string& null_text);

/// Reads `path` as text under the same bounds (ConfigError naming `what` otherwise).
std::string read_config_text(const std::filesystem::path& path, const std::string& what);

}  // namespace biaslab
