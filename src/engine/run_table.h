#pragma once
// `biaslab runs`: the run directories under a folder (sweeps included) as a table, read
// from their files only (summary.json, config.yaml, metrics.csv, timing files, the
// checkpoints' stored state).
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace biaslab {

struct RunRow {
  std::string name;       ///< path relative to the folder listed
  std::string family, preset;
  int64_t train_size = -1;     ///< training images; -1 unknown (the run has no summary yet)
  int64_t steps_done = 0;      ///< of the finished run, else of its newest checkpoint
  int64_t steps_planned = -1;  ///< -1 unknown (train.epochs and no epoch finished yet)
  /// complete (summary.json) | running (its lock is held) | resumable (a checkpoint to
  /// resume from) | failed (stopped before its first checkpoint, or no usable one)
  std::string state;
  double best_acc = std::numeric_limits<double>::quiet_NaN();   ///< by the run's selection metric
  double final_acc = std::numeric_limits<double>::quiet_NaN();  ///< final test accuracy
  int64_t parameters = -1;
  double time_s = std::numeric_limits<double>::quiet_NaN();  ///< training seconds (timing.csv)
};

/// Every run directory under `root` (itself included), recursively, in path order.
/// A run directory's own subfolders are not searched.
std::vector<RunRow> list_runs(const std::filesystem::path& root);

/// The columns, in table order (the keys --sort accepts).
const std::vector<std::string>& run_table_columns();

/// Sorts by `key` (one of run_table_columns(); ConfigError otherwise): numbers
/// descending (best accuracy first; unknown last), text ascending.
void sort_runs(std::vector<RunRow>& rows, const std::string& key);

std::string runs_csv(const std::vector<RunRow>& rows);
/// An aligned text table with a header line.
std::string runs_text(const std::vector<RunRow>& rows);

}  // namespace biaslab
