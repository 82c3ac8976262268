#pragma once
// An experiment end to end: from a resolved Config to a complete run directory
// (config.yaml, meta.json, metrics.csv, summary.json, timing.csv, timing.json,
// train.log, checkpoints/), resuming from the directory's checkpoints when it
// already holds the same run. The story is told here; its parts are the run context
// (run_context.h), the plan (run_plan.h), what is trained (learner.h), the loaders
// (loaders.h), the trainer (trainer.h) and the recorder (run_recorder.h).
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "config/config.h"

namespace biaslab {

struct TrainRequest {
  std::filesystem::path run_dir;  ///< created if missing
  bool force = false;             ///< discard an earlier run in run_dir and start over
  bool require_checkpoint = false;  ///< --resume: run_dir must hold a checkpoint
  std::string command_line;       ///< recorded in meta.json
};

/// Trains `cfg` into `req.run_dir` (resuming when it holds a checkpoint of the same
/// config; returning at once when that run is complete). Returns summary.json's content.
nlohmann::json run_training(const Config& cfg, const TrainRequest& req);

}  // namespace biaslab
