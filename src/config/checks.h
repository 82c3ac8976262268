#pragma once
// The cross-field rules of a config (after every key is read): the run name, the keys
// without defaults, data, the model family's rules (models/model_checks.h) and training.
#include <filesystem>

#include "config/config.h"
#include "config/flat.h"

namespace biaslab::config_detail {

/// ConfigError naming the key, where its value came from, and what was expected.
void check(const Config& c, const Flat& merged, const std::filesystem::path& home);

}  // namespace biaslab::config_detail
