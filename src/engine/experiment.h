#pragma once
// An experiment end to end: from a resolved Config to a complete run directory
// (config.yaml, meta.json, metrics.csv, summary.json, train.log, checkpoints/), and
// back from a run directory or checkpoint to re-evaluated metrics.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/evaluate.h"

namespace biaslab {

struct TrainRequest {
  std::filesystem::path run_dir;  ///< created if missing
  bool force = false;             ///< replace the files of an earlier run in run_dir
  std::string command_line;       ///< recorded in meta.json
};

/// Trains `cfg` into `req.run_dir`; returns the summary also written to summary.json.
nlohmann::json run_training(const Config& cfg, const TrainRequest& req);

struct EvalReport {
  std::string checkpoint;   ///< the checkpoint evaluated
  EvalMetrics test;
  nlohmann::json recorded;  ///< summary.json's "best" entry when a run directory was given, else null
};

/// Re-evaluates the test set with the best checkpoint of a run directory (or the
/// given checkpoint file), using the resolved config stored with it plus `overrides`.
EvalReport evaluate_run(const std::filesystem::path& run_dir_or_checkpoint,
                        const std::vector<std::string>& overrides = {});

}  // namespace biaslab
