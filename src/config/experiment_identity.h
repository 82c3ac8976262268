#pragma once
// What a run computes, as text: two runs are the same experiment when these are equal.
#include <filesystem>
#include <string>

namespace biaslab {

/// The resolved config (`config_yaml`, stored in `dir`) without the keys that say where
/// and how a run executes rather than what it computes: a run may resume with its data
/// moved, on another device or with another thread count or memory format (these void
/// the bitwise guarantee; see docs/reliability.md, "Training state"). CheckpointError when the text no longer loads.
std::string experiment_identity(const std::string& config_yaml, const std::filesystem::path& dir);

}  // namespace biaslab
