#include "engine/experiment.h"

#include <chrono>
#include <optional>

#include "config/loader.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/signals.h"
#include "data/dataset.h"
#include "distributed/communicator.h"
#include "engine/checkpoint.h"
#include "config/experiment_identity.h"
#include "engine/learner.h"
#include "engine/loaders.h"
#include "engine/memory_budget.h"
#include "engine/run_context.h"
#include "engine/run_plan.h"
#include "engine/run_recorder.h"
#include "engine/schedule.h"
#include "engine/trainer.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The training state the plan resumes from, loaded by every rank (the run directory must
// be visible to all nodes): weights, optimizer state, RNG state and training state; then
// rank 0's weights (its init_from, its checkpoint) everywhere.
TrainState restore(const RunPlan& plan, Learner& learner, RunContext& ctx) {
  TrainState state;
  if (!plan.checkpoint.empty()) {
    const CheckpointContents contents = load_checkpoint(plan.checkpoint, *learner.model, learner.optimizer.get(),
                                                        learner.shadow.get(), /*restore_rng=*/true);
    state = plan.resume ? plan.resume->state : train_state_from_json(contents.state_json);
  }
  if (ctx.comm) {
    ctx.comm->broadcast(learner_tensors(learner), "the initial weights");
    // A broadcast's sender may finish first: every rank has read the checkpoint before
    // rank 0 writes the next one.
    ctx.comm->barrier("loading the checkpoint");
  }
  return state;
}

// What this rank would train, for comparing the ranks of a distributed job.
std::string experiment_summary(const std::string& config_yaml, const fs::path& dir, const Dataset& data,
                               int64_t parameters) {
  return fmt::format("{}data: {} train / {} val / {} test images; model: {} parameters\n",
                     experiment_identity(config_yaml, dir), data.train.size(), data.val.size(), data.test.size(),
                     parameters);
}

}  // namespace

json run_training(const Config& given, const TrainRequest& req) {
  const auto wall_start = std::chrono::steady_clock::now();
  const fs::path& dir = req.run_dir;
  // Everything that can fail on bad input (device, data files, model options,
  // checkpoints) happens before the run directory is written to.
  RunContext ctx = training_context(given);
  // The run computes in the resolved precision (train.precision: auto); config.yaml keeps
  // the config as given, so the run resumes and compares under its own identity.
  Config cfg = given;
  cfg.train.precision = ctx.precision;
  // A finished run is "nothing to do" on any machine, a smaller one too.
  if (req.force || !holds_finished_run(dir))
    check_memory_budget(cfg, /*activations_in_host_memory=*/!ctx.device.is_cuda());
  Dataset data = load_dataset(cfg.data);
  if (ctx.env.distributed() && data.train.size() < ctx.env.world_size)
    throw ConfigError(fmt::format("data: {} training images cannot be split across {} ranks", data.train.size(),
                                  ctx.env.world_size));
  // Pretrained weights (model.init_from) for a fresh run, checked before the run directory
  // is touched; a resumed run takes its weights from its checkpoint instead.
  const bool resumable = may_resume(dir, req.force, req.require_checkpoint);
  Learner learner = make_learner(cfg, ctx.device, /*init_from=*/!resumable);
  const std::string config_yaml = to_yaml(given);

  // A distributed job: every rank joins here. Rank 0 alone owns the run directory (lock,
  // config, logs, metrics, checkpoints); the others follow its plan and write nothing.
  join_ranks(ctx, cfg);
  require_same_experiment(ctx, experiment_summary(config_yaml, dir, data, learner.parameters));
  const RunPlan plan = agree_on_plan(ctx, [&] {
    return plan_run({dir, req.force, req.require_checkpoint, config_yaml, given.train.precision, cfg.train.precision,
                     resumable ? std::function<void()>([&] { apply_init_from(learner, cfg.model); }) : nullptr});
  });
  cfg.train.precision = plan.precision;
  if (plan.action == "complete") return ctx.writer() ? json::parse(read_file(dir / "summary.json")) : json();
  TrainState state = restore(plan, learner, ctx);

  std::optional<RunRecorder> recorder;
  if (ctx.writer()) {
    recorder.emplace(dir, cfg, config_yaml, ctx, learner);
    recorder->start(given.train.precision, req.command_line, plan.resume ? &*plan.resume : nullptr, state, data);
  }
  RunLoaders loaders = make_run_loaders(cfg, data, ctx.env.rank, ctx.env.world_size);
  LrSchedule schedule(cfg.sched, cfg.optim.lr, planned_steps(cfg.train, loaders.train->batches_per_epoch()));
  const TrainerCallbacks callbacks = recorder ? recorder->callbacks(state) : TrainerCallbacks{};
  Trainer trainer(*learner.model, *learner.optimizer, schedule, *loaders.train,
                  data.val.size() > 0 ? loaders.val.get() : nullptr, *loaders.test, cfg.train, ctx.device, callbacks,
                  learner.ema.get(), ctx.comm.get());
  trainer.set_train_eval(loaders.train_eval.get());
  // Resumed from last.prev.pt or best.pt: make `last` the state training continues from
  // (for a finished run, fit() does nothing and this is the final `last`).
  if (recorder && plan.resume && plan.resume->checkpoint.filename() != "last.pt")
    callbacks.save_checkpoint("last", state);
  if (ctx.comm) trainer.set_rank_seed(uint64_t(cfg.runtime.seed));
  install_stop_handlers();
  trainer.fit(state);
  if (const int sig = stop_signal(); sig != 0 && recorder)
    spdlog::warn("signal {} arrived during the final evaluation: the run was complete, so it is finished (summary "
                 "written, exit status 0) rather than stopped",
                 sig);
  if (!recorder) return json();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return recorder->finish(state, trainer.selection_metric(), data, wall_s);
}

}  // namespace biaslab
