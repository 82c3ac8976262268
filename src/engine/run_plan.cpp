#include "engine/run_plan.h"

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/text_diff.h"
#include "distributed/communicator.h"
#include "config/experiment_identity.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

std::string RunPlan::to_json() const {
  return json{{"action", action}, {"checkpoint", checkpoint}, {"precision", precision}, {"exit_code", exit_code},
              {"message", message}}
      .dump();
}

RunPlan RunPlan::from_json(const std::string& text) {
  const json j = json::parse(text);
  RunPlan p;
  p.action = j.at("action");
  p.checkpoint = j.at("checkpoint");
  p.precision = j.at("precision");
  p.exit_code = j.at("exit_code");
  p.message = j.at("message");
  return p;
}

bool may_resume(const fs::path& dir, bool force, bool require_checkpoint) {
  return require_checkpoint || (!force && fs::is_directory(dir / "checkpoints") && !fs::is_empty(dir / "checkpoints"));
}

namespace {

// Only a new, empty or biaslab's own folder; then one process per run directory at a
// time (a sweep and a scheduler may both try).
std::shared_ptr<FileLock> lock_run_dir(const fs::path& dir) {
  run_dir::claim(dir);
  fs::create_directories(dir);
  auto lock = std::make_shared<FileLock>(dir / ".lock");
  if (!lock->held())
    throw CheckpointError("run directory " + dir.string() + " is in use by another biaslab process" +
                          (lock->holder_pid() ? " (pid " + std::to_string(lock->holder_pid()) + ")" : std::string()) +
                          "; wait for it to finish or stop it first");
  run_dir::remove_stale_temporaries(dir);  // of writes a killed process left
  return lock;
}

std::string difference(const std::string& a, const std::string& b, const std::string& name_a,
                       const std::string& name_b) {
  return describe_difference(first_line_difference(a, b), name_a, name_b);
}

// The run in `dir` (config `stored`, identity form) is another experiment than the one
// requested: why, and what to do.
[[noreturn]] void refuse_other_config(const PlanRequest& req, const std::optional<run_dir::ResumePoint>& resume,
                                      const std::string& stored) {
  const fs::path& dir = req.dir;
  const std::string requested = experiment_identity(req.config_yaml, dir);
  // config.yaml edited by hand since the run started, or --set values?
  const std::string on_disk = fs::exists(dir / "config.yaml") ? read_file(dir / "config.yaml") : "";
  if (req.require_checkpoint && resume && !on_disk.empty() && experiment_identity(on_disk, dir) != stored)
    throw ConfigError("--resume " + dir.string() + ": " + (dir / "config.yaml").string() +
                      " differs from the config stored in " + resume->checkpoint.string() + " (" +
                      difference(stored, experiment_identity(on_disk, dir), "checkpoint", "config.yaml") +
                      "): it was edited after the run started; a run resumes with the config it started with, "
                      "so restore config.yaml, or train the edited config into another folder with "
                      "`biaslab train -c " + (dir / "config.yaml").string() + " --out NEW_DIR`");
  if (req.require_checkpoint)
    throw ConfigError("--resume " + dir.string() + ": the --set values change the run's config (" +
                      difference(stored, requested, "stored", "requested") +
                      "); a run resumes with the config it started with (only data.root, data.workers, "
                      "runtime.threads, runtime.device, runtime.memory_format, runtime.kernels, runtime.dist_backend, "
                      "runtime.dist_timeout_s, runtime.max_memory_gb, train.log_every and train.tensorboard may change)");
  throw ConfigError("run directory " + dir.string() + " holds a run of a different config (" +
                    difference(stored, requested, "stored", "requested") +
                    "); pass --force to replace it, or --out to choose another folder");
}

// An earlier run in the directory: its resume point, after checking it is this experiment
// (a directory without a checkpoint starts over).
std::optional<run_dir::ResumePoint> earlier_run(const PlanRequest& req) {
  const fs::path& dir = req.dir;
  std::optional<run_dir::ResumePoint> resume = run_dir::find_resume_point(dir);
  if (req.require_checkpoint && !resume)
    throw CheckpointError("--resume " + dir.string() + ": no checkpoint to resume from");
  const std::string stored_yaml =
      resume ? resume->contents.config_yaml : (fs::exists(dir / "config.yaml") ? read_file(dir / "config.yaml") : "");
  const std::string stored = stored_yaml.empty() ? "" : experiment_identity(stored_yaml, dir);
  if (!stored.empty() && stored != experiment_identity(req.config_yaml, dir)) refuse_other_config(req, resume, stored);
  if (!resume) {
    spdlog::info("{} holds no checkpoint yet: starting the run over", dir.string());
    if (req.apply_deferred_init) req.apply_deferred_init();  // before the wipe
    run_dir::wipe(dir);
  }
  return resume;
}

// train.precision: auto resolves once per run: a resume (possibly on another machine or
// device) keeps the precision the run started with, as meta.json recorded it.
std::string resumed_precision(const PlanRequest& req) {
  if (req.given_precision != "auto") return req.precision;
  try {
    const std::string first = json::parse(read_file(req.dir / "meta.json")).value("precision", "");
    if ((first == "fp32" || first == "bf16") && first != req.precision) {
      spdlog::warn("train.precision: auto resolves to {} here, but the run started in {}: continuing in {}",
                   req.precision, first, first);
      return first;
    }
  } catch (const std::exception&) {
  }
  return req.precision;
}

bool finished(const run_dir::ResumePoint& resume, const fs::path& dir) {
  return resume.state.finished && fs::exists(dir / "summary.json") && resume.checkpoint.filename() == "last.pt";
}

}  // namespace

bool holds_finished_run(const fs::path& dir) {
  if (!fs::exists(dir / "summary.json")) return false;
  try {
    const std::optional<run_dir::ResumePoint> resume = run_dir::find_resume_point(dir);
    return resume && finished(*resume, dir);
  } catch (const Error&) {
    return false;  // plan_run reports it
  }
}

RunPlan plan_run(const PlanRequest& req) {
  const fs::path& dir = req.dir;
  RunPlan plan;
  plan.precision = req.precision;
  plan.lock = lock_run_dir(dir);
  // Fresh run, resume, or already complete?
  if (req.force) {
    if (run_dir::holds_run(dir)) spdlog::info("--force: discarding the earlier run in {}", dir.string());
    run_dir::wipe(dir);
  } else if (run_dir::holds_run(dir)) {
    plan.resume = earlier_run(req);
  }
  if (req.require_checkpoint && !plan.resume)
    throw CheckpointError("--resume " + dir.string() + ": no checkpoint to resume from");
  if (!plan.resume) return plan;
  const run_dir::ResumePoint& resume = *plan.resume;
  if (finished(resume, dir)) {
    spdlog::info("{} is already complete ({} steps); nothing to do", dir.string(), resume.state.step);
    plan.action = "complete";
    return plan;
  }
  plan.precision = resumed_precision(req);
  plan.checkpoint = fs::absolute(resume.checkpoint).string();  // the ranks' directories may differ
  return plan;
}

RunPlan agree_on_plan(RunContext& ctx, const std::function<RunPlan()>& decide) {
  dist::Communicator* comm = ctx.comm.get();
  RunPlan plan;
  if (ctx.writer()) {
    try {
      plan = decide();
    } catch (const std::exception& e) {
      if (comm) {
        const auto* error = dynamic_cast<const Error*>(&e);
        RunPlan failed;
        failed.action = "error";
        failed.exit_code = error ? error->exit_code() : 1;
        failed.message = e.what();
        comm->share("plan", failed.to_json());
        comm->barrier("sharing rank 0's plan");
      }
      throw;
    }
    if (comm) comm->share("plan", plan.to_json());
  } else {
    plan = RunPlan::from_json(comm->share("plan", ""));
  }
  // Every rank has the plan before any leaves (rank 0 may host the store the others read).
  if (comm) comm->barrier("sharing rank 0's plan");
  if (plan.action == "error" && !ctx.writer())
    throw DistError("rank 0 stopped before training: " + plan.message, plan.exit_code);
  return plan;
}

}  // namespace biaslab
