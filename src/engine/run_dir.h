#pragma once
// The files of a run directory: which ones make a run, where it can resume from,
// and the deterministic (metrics.csv, summary.json) and measured (timing.csv,
// timing.json) records written into it.
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

#include "config/config.h"
#include "data/dataset.h"
#include "engine/checkpoint.h"
#include "engine/train_state.h"
#include "engine/trainer.h"

namespace biaslab::run_dir {

/// True when `dir` holds any file of a run.
bool holds_run(const std::filesystem::path& dir);
/// Removes the files of a run (and only those) from `dir`.
void wipe(const std::filesystem::path& dir);
/// Removes temporary files of checkpoint writes that a crash interrupted.
void remove_stale_temporaries(const std::filesystem::path& dir);

struct ResumePoint {
  std::filesystem::path checkpoint;
  CheckpointContents contents;
  TrainState state;
};

/// The most advanced checkpoint (last, last.prev, best) that verifies; unusable ones
/// are logged and skipped. None when `dir` has no checkpoint; CheckpointError when it
/// has some and none is usable.
std::optional<ResumePoint> find_resume_point(const std::filesystem::path& dir);

/// metrics.csv for the history in `state` (EMA columns when `ema`).
std::string metrics_csv(const TrainState& state, bool ema);

/// summary.json: a function of the config and the training state only.
nlohmann::json summary(const Config& cfg, const TrainState& state, const std::string& selection_metric,
                       int64_t parameters, const Dataset& data, int threads, const c10::Device& device);

/// timing.csv rows of `file` for epochs <= up_to_epoch, with the header.
std::string kept_timing_rows(const std::filesystem::path& file, int64_t up_to_epoch);
std::string timing_row(const EpochTiming& t);
/// timing.json from the timing.csv content.
nlohmann::json timing_summary(const std::string& timing_csv, double wall_s, int64_t images_seen);

}  // namespace biaslab::run_dir
