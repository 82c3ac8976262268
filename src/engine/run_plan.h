#pragma once
// What a `train` does with its run directory, decided before anything is written: train
// from scratch, resume from a checkpoint, or nothing (the run is complete); and refusing
// a directory that is locked, foreign, or holds another experiment. In a distributed job
// rank 0 decides and the other ranks follow its plan.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/file_lock.h"
#include "engine/run_context.h"
#include "engine/run_dir.h"

namespace biaslab {

struct RunPlan {
  std::string action = "train";  ///< train | complete | error (another rank's view of rank 0's failure)
  std::string checkpoint;         ///< absolute path to resume from ("" = fresh start)
  std::string precision;          ///< the precision to train in (a resume keeps the run's)
  int exit_code = 0;              ///< action error: rank 0's exit status
  std::string message;            ///< action error: rank 0's message

  // Rank 0 only.
  std::optional<run_dir::ResumePoint> resume;  ///< the checkpoint and its training state
  std::shared_ptr<FileLock> lock;              ///< held for the whole run

  std::string to_json() const;
  static RunPlan from_json(const std::string& text);
};

struct PlanRequest {
  std::filesystem::path dir;
  bool force = false;               ///< --force: discard an earlier run
  bool require_checkpoint = false;  ///< --resume: there must be a checkpoint
  std::string config_yaml;          ///< the config as given (what config.yaml holds)
  std::string given_precision;      ///< train.precision as given (auto resolves once per run)
  std::string precision;            ///< train.precision resolved here
  /// model.init_from was left for a resume; called when the run starts over instead.
  std::function<void()> apply_deferred_init;
};

/// Rank 0 (or the only process): claims and locks the directory, removes the temporaries
/// of dead writers, and decides. ConfigError / CheckpointError (nothing written) when the
/// directory is in use, holds a different config, or --resume finds no checkpoint.
RunPlan plan_run(const PlanRequest& req);

/// Every rank: rank 0 runs `decide` and shares the plan (or its error, which then stops
/// the other ranks with rank 0's message and status); the others receive it.
RunPlan agree_on_plan(RunContext& ctx, const std::function<RunPlan()>& decide);

/// True when `dir` holds a finished run, the one case plan_run calls "complete" (summary.json
/// and a last.pt of the finished state); reads only. Such a rerun has nothing to do, so the
/// checks of what training would need (memory) do not apply to it.
bool holds_finished_run(const std::filesystem::path& dir);

/// True when --resume or a directory with checkpoints may make this run a resume (then
/// model.init_from waits for plan_run's decision).
bool may_resume(const std::filesystem::path& dir, bool force, bool require_checkpoint);

}  // namespace biaslab
