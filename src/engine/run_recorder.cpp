#include "engine/run_recorder.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "config/loader.h"
#include "core/build_info.h"
#include "core/cpu_info.h"
#include "core/errors.h"
#include "core/clock.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/torch_compat.h"
#include "engine/checkpoint.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

// Where and how this process computes, as meta.json records it for the start and for
// every resume.
json execution_json(const Config& cfg, const RunContext& ctx, bool channels_last) {
  return {{"threads", ctx.threads},
          {"device", ctx.device.str()},
          {"precision", cfg.train.precision},
          {"memory_format", channels_last ? "channels_last" : "contiguous"},
          {"distributed", distributed_json(ctx)},
          {"host", hostname()},
          {"cpu", cpu_info()}};
}

// TensorBoard's per-epoch scalars of one epoch, at the step it ended on.
void epoch_events(EventWriter& w, const EpochRecord& r) {
  const int64_t s = r.step;
  w.scalar("epoch/train_loss", s, r.train_loss);
  w.scalar("epoch/train_acc", s, r.train_acc);
  w.scalar("epoch/lr", s, r.lr);
  if (!r.evaluated) return;
  auto pair = [&](const std::string& prefix, const EvalPair& p) {
    w.scalar(prefix + "loss", s, p.loss);
    w.scalar(prefix + "acc", s, p.acc);
    if (p.has_top5()) w.scalar(prefix + "top5_acc", s, p.top5);
  };
  if (r.has_test) pair("test/", r.test);
  if (r.has_val) pair("val/", r.val);
  if (r.has_train_eval) pair("train_eval/", r.train_eval);
  if (r.has_ema) {
    if (r.has_test) pair("ema_test/", r.ema_test);
    if (r.has_val) pair("ema_val/", r.ema_val);
    if (r.has_train_eval) pair("ema_train_eval/", r.ema_train_eval);
  }
}
// The tags epoch_events writes: a resumed run writes them again from its history.
const std::vector<std::string> kEpochTags = {"epoch/",    "test/",           "val/",           "ema_test/",
                                             "ema_val/", "train_eval/", "ema_train_eval/"};

void step_events(EventWriter& w, const StepLog& r) {
  auto put = [&](const char* tag, double v) {
    if (!std::isnan(v)) w.scalar(tag, r.step, v);
  };
  put("train/loss", r.loss);
  put("train/acc", r.acc);
  put("train/lr", r.lr);
  put("train/grad_norm", r.grad_norm);
  put("train/images_per_s", std::round(10 * r.images_per_s) / 10);  // as metrics_steps.csv has it
  put("train/skipped_steps", double(r.skipped_steps));
}

// The run's hyper-parameters for TensorBoard's HParams tab: every config key, numbers
// and booleans typed as such.
std::map<std::string, HParam> hparams_of(const Config& cfg) {
  std::map<std::string, HParam> out;
  for (const auto& [key, text] : config_values(cfg)) {
    if (text.empty()) continue;
    if (text == "true" || text == "false") {
      out[key] = text == "true";
      continue;
    }
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end && *end == '\0' && std::isfinite(v))
      out[key] = v;
    else
      out[key] = text;
  }
  return out;
}

}  // namespace

json distributed_json(const RunContext& ctx) {
  if (!ctx.comm) return nullptr;
  return {{"world_size", ctx.env.world_size},
          {"ranks_per_node", ctx.env.local_world_size},
          {"backend", ctx.backend},
          {"launcher", ctx.env.launcher}};
}

RunRecorder::RunRecorder(fs::path dir, const Config& config, std::string config_yaml, const RunContext& ctx,
                         Learner& learner)
    : dir_(std::move(dir)), cfg_(config), config_yaml_(std::move(config_yaml)), ctx_(ctx), learner_(learner) {}

RunRecorder::~RunRecorder() {
  if (logging_) stop_log_file();
}

void RunRecorder::start(const std::string& given_precision, const std::string& command_line,
                        const run_dir::ResumePoint* resume, const TrainState& state, const Dataset& data) {
  const json execution = execution_json(cfg_, ctx_, learner_.channels_last);
  json meta = execution;
  meta.update({{"biaslab_version", build::kVersion}, {"git_commit", build::kGitCommit},
               {"git_dirty", build::kGitDirty},
               {"libtorch_version", compat::torch_version()}, {"seed", cfg_.runtime.seed},
               {"subset_seed", cfg_.data.subset_seed}, {"started", now_iso8601()}, {"command", command_line},
               {"determinism", "bitwise reproducible on the CPU for the same config, seed, thread count, number of "
                               "ranks, LibTorch build and machine type"}});
  if (resume) {
    try {
      json old = json::parse(read_file(dir_ / "meta.json"));
      json entry = execution;
      entry.update({{"at", now_iso8601()}, {"step", state.step}, {"from", resume->checkpoint.filename()},
                    {"command", command_line}});
      old["resumed"].push_back(entry);
      meta = old;
    } catch (const std::exception&) {
      meta["resumed"] = json::array({{{"at", now_iso8601()}, {"step", state.step}}});
    }
  }
  // meta.json first: it is what marks the folder as a biaslab run directory (run_dir::is_run_dir).
  atomic_write(dir_ / "meta.json", meta.dump(2) + "\n");
  fs::create_directories(dir_ / "checkpoints");
  log_to_file((dir_ / "train.log").string());
  logging_ = true;
  if (resume)
    spdlog::info("resuming {} from {} (step {}, epoch {})", dir_.string(), resume->checkpoint.string(), state.step,
                 state.epoch);
  else
    spdlog::info("run {} -> {} (libtorch {}, {} thread(s){}, device {}, {}{}{})", cfg_.name, dir_.string(),
                 compat::torch_version(), ctx_.threads, ctx_.comm ? " per rank" : "", ctx_.device.str(),
                 cfg_.train.precision, given_precision == "auto" ? " (train.precision: auto)" : "",
                 learner_.channels_last ? ", channels-last" : "");
  atomic_write(dir_ / "config.yaml", config_yaml_);
  spdlog::info("data: {} train / {} val / {} test images, {}x{}x{}, {} classes", data.train.size(), data.val.size(),
               data.test.size(), cfg_.data.channels, cfg_.data.image_size, cfg_.data.image_size,
               cfg_.data.num_classes);
  if (!data.skipped.empty()) {
    spdlog::warn("data: skipped {} image(s) OpenCV could not decode (data.on_bad_image: skip):", data.skipped.size());
    for (const auto& f : data.skipped) spdlog::warn("  skipped {}", f);
    std::string list;
    for (const auto& f : data.skipped) list += f + "\n";
    atomic_write(dir_ / "skipped_images.txt", list);
  }
  spdlog::info("model: {} ({}), {} parameters", cfg_.model.preset.empty() ? cfg_.model.family : cfg_.model.preset,
               cfg_.model.family, learner_.parameters);
  if (!learner_.init_note.empty()) spdlog::info("{}", learner_.init_note);
}

TrainerCallbacks RunRecorder::callbacks(const TrainState& state) {
  // metrics.csv and timing.csv always agree with the state training continues from.
  const bool with_ema = learner_.ema != nullptr;
  atomic_write(dir_ / "metrics.csv", run_dir::metrics_csv(state, with_ema));
  timing_csv_ = run_dir::kept_timing_rows(dir_ / "timing.csv", state.epoch);
  atomic_write(dir_ / "timing.csv", timing_csv_);
  // Rows past the checkpoint go: the resumed run writes them again.
  const fs::path steps_file = dir_ / "metrics_steps.csv";
  atomic_write(steps_file, run_dir::kept_step_rows(steps_file, state.step));
  steps_csv_.open(steps_file, std::ios::app);
  if (!steps_csv_) throw Error(steps_file.string() + ": cannot open for appending");
  if (cfg_.train.tensorboard && !kWithTensorBoard)
    spdlog::warn("train.tensorboard: this biaslab was built without TensorBoard support "
                 "(-DBIASLAB_WITH_TENSORBOARD=OFF); no event files are written");
  if (cfg_.train.tensorboard && kWithTensorBoard) {
    // The same events file continues: steps past the checkpoint go, the per-epoch scalars
    // and hyper-parameters are written again from the state.
    events_ = std::make_unique<EventWriter>(dir_ / "tensorboard", state.step, kEpochTags);
    events_->session_start(hparams_of(cfg_), "");
    for (const auto& r : state.history) epoch_events(*events_, r);
  }
  TrainerCallbacks c;
  c.on_step_log = [this, steps_file](const StepLog& row) {
    steps_csv_ << run_dir::step_row(row) << std::flush;
    if (!steps_csv_) throw Error(steps_file.string() + ": write failed (disk full?)");
    if (events_) step_events(*events_, row);
  };
  c.on_epoch_end = [this, with_ema](const TrainState& s) {
    atomic_write(dir_ / "metrics.csv", run_dir::metrics_csv(s, with_ema));
    if (events_) epoch_events(*events_, s.history.back());
  };
  c.save_checkpoint = [this](const std::string& name, const TrainState& s) {
    const fs::path ckpt_dir = dir_ / "checkpoints";
    const fs::path path = ckpt_dir / (name + ".pt");
    // Keep the previous `last` as last.prev.pt, a fallback if the new one is lost. It is
    // linked, not moved: last.pt never disappears, it is replaced atomically.
    if (name == "last" && fs::exists(path)) atomic_copy(path, ckpt_dir / "last.prev.pt");
    save_checkpoint(path.string(), *learner_.model, learner_.optimizer.get(), learner_.shadow.get(),
                    CheckpointContents{config_yaml_, train_state_to_json(s), "", ""});
    spdlog::debug("checkpoint {} written (step {})", path.string(), s.step);
  };
  c.remove_checkpoint = [this](const std::string& name) { fs::remove(dir_ / "checkpoints" / (name + ".pt")); };
  c.on_timing = [this](const EpochTiming& t) {
    timing_csv_ += run_dir::timing_row(t);
    atomic_write(dir_ / "timing.csv", timing_csv_);
  };
  return c;
}

json RunRecorder::finish(const TrainState& state, const std::string& selection_metric, const Dataset& data,
                         double wall_s) {
  json summary =
      run_dir::summary(cfg_, state, selection_metric, learner_.parameters, data, ctx_.threads, ctx_.device);
  summary["model"]["flops_per_image"] = learner_.flops_per_image;
  summary["weights_fingerprint"] = weights_fingerprint(*learner_.model);
  if (learner_.shadow) summary["ema_weights_fingerprint"] = weights_fingerprint(*learner_.shadow);
  if (ctx_.comm) summary["distributed"] = distributed_json(ctx_);
  atomic_write(dir_ / "summary.json", summary.dump(2) + "\n");
  if (events_) events_->session_end(true);
  json timing = run_dir::timing_summary(timing_csv_, wall_s, state.images_seen);
  atomic_write(dir_ / "timing.json", timing.dump(2) + "\n");
  const auto& last = state.history.back();
  spdlog::info("done: final test acc {:.2f}%, best {} {:.2f}% at epoch {}; {:.0f}s training", 100 * last.test.acc,
               selection_metric, 100 * state.best_metric, state.best_epoch, timing["train_time_s"].get<double>());
  return summary;
}

}  // namespace biaslab
