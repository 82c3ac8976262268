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
#include "engine/step_log.h"
#include "engine/train_state.h"
#include "engine/trainer.h"

namespace biaslab::run_dir {

/// True when `dir` holds any file of a run.
bool holds_run(const std::filesystem::path& dir);
/// True when biaslab wrote `dir`: its meta.json is biaslab's, or it holds a biaslab checkpoint.
bool is_run_dir(const std::filesystem::path& dir);
/// The rule for a run directory given to `train` (--out, or runs/<name>): it may not
/// exist yet, be empty, or be a biaslab run directory; anything else is refused
/// (CheckpointError, exit 5) before anything is written, whatever --force says.
void claim(const std::filesystem::path& dir);
/// True for the names export writes into a run's export/ ({best,last,ema}[.state_dict].pt).
bool is_export_name(const std::string& name);
/// Removes the files a run writes (and only those: a file of another name, in the folder
/// or in checkpoints/ and export/, stays) from `dir`. meta.json is kept (the next run
/// replaces it): it is what makes the folder a run directory meanwhile.
void wipe(const std::filesystem::path& dir);
/// Removes the temporary files of writes that a dead process left (in the folder,
/// checkpoints/ and export/).
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
/// metrics_steps.csv rows of `file` for steps <= up_to_step, with the header; rows from
/// the first incomplete one on (a crash mid-write) are left out.
std::string kept_step_rows(const std::filesystem::path& file, int64_t up_to_step);
/// One metrics_steps.csv row (loss, accuracy and gradient norm empty when NaN).
std::string step_row(const StepLog& r);
/// timing.json from the timing.csv content.
nlohmann::json timing_summary(const std::string& timing_csv, double wall_s, int64_t images_seen);

}  // namespace biaslab::run_dir
