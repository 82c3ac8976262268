#pragma once
// Reading configs: experiment YAML + presets (models/, data/) + --set overrides,
// validated into a Config. This header does not expose yaml-cpp.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace biaslab {

struct LoadOptions {
  /// Folder holding models/ and data/ presets; empty = home_dir().
  std::filesystem::path home;
  /// False when reading a resolved config (a run's config.yaml): every value is
  /// already explicit and presets are not looked up again.
  bool resolve_presets = true;
};

/// Loads `path`, applies the presets it names and the `KEY=VALUE` overrides (values
/// parsed as YAML), validates everything. Throws ConfigError naming file:line and key.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {},
                   const LoadOptions& options = {});

/// Same for YAML text; `source_name` stands for the file name in messages.
Config load_config_text(const std::string& yaml, const std::string& source_name,
                        const std::vector<std::string>& overrides = {},
                        const LoadOptions& options = {});

/// The resolved config as YAML: every key explicit, reloadable with resolve_presets=false.
std::string to_yaml(const Config& config);

/// to_yaml without the keys that say where and how a run executes rather than what it
/// computes (execution_keys): two configs are the same experiment when these are equal.
std::string identity_yaml(const Config& config);

/// The keys identity_yaml leaves out, as the field table marks them: data.root,
/// data.workers, train.log_every, train.tensorboard and runtime's keys but the seed.
std::vector<std::string> execution_keys();

/// Every key of to_yaml's output with its value as text ("model.depth" -> "6"; lists in
/// YAML's flow style, null as ""), in to_yaml's order: the run's hyper-parameters.
std::vector<std::pair<std::string, std::string>> config_values(const Config& config);

/// Some `data` keys of `config` as a data preset file (keys without the "data."
/// prefix, e.g. for a dataset written by `biaslab data export`).
std::string data_preset_yaml(const Config& config, const std::vector<std::string>& keys);

/// BIASLAB_HOME if set, else the source tree biaslab was built from.
std::filesystem::path home_dir();

/// Names of the presets under home/<kind> (kind: "models" or "data"), sorted.
std::vector<std::string> list_presets(const std::string& kind,
                                      const std::filesystem::path& home = {});

}  // namespace biaslab
