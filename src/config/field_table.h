#pragma once
// The field table of config/: one typed binding per key (its type, range, choices and
// the model families it applies to), used to read the merged layers into a Config and
// to write the resolved config back out, so reading and writing cannot drift.
#include <string>
#include <vector>

#include "config/config.h"
#include "config/flat.h"

namespace biaslab::config_detail {

/// Every key of `merged` read into a Config (model.family first: it decides which model
/// keys apply). ConfigError for an unknown key (with suggestions), a key of another
/// family, or a value of the wrong type or range.
Config read_fields(const Flat& merged);

/// A hybrid's keys that belong to the tokenizer it does not use: an error when set,
/// left out of the resolved YAML.
std::vector<std::string> other_tokenizer_keys(const ModelConfig& m);
/// The data keys of the formats `d.format` is not, likewise.
std::vector<std::string> other_format_keys(const DataConfig& d);

}  // namespace biaslab::config_detail
