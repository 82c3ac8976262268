#include "engine/experiment.h"

#include <unistd.h>

#include <torch/cuda.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "config/loader.h"
#include "config/suggest.h"
#include "core/build_info.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/file_lock.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/runtime.h"
#include "core/signals.h"
#include "core/torch_compat.h"
#include "data/dataset.h"
#include "engine/checkpoint.h"
#include "engine/ema.h"
#include "engine/memory_budget.h"
#include "engine/memory_format.h"
#include "engine/optimizer.h"
#include "engine/precision.h"
#include "engine/run_dir.h"
#include "engine/trainer.h"
#include "dist/communicator.h"
#include "export/weights.h"
#include "models/registry.h"
#include "models/summary.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {


struct LogFileCloser {
  ~LogFileCloser() { stop_log_file(); }
};

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

LoaderOptions loader_options(const Config& cfg, const Dataset& data, int64_t batch, bool train) {
  const DataConfig& d = cfg.data;
  LoaderOptions o;
  o.batch_size = batch;
  o.shuffle = train;
  o.drop_last = train;
  o.seed = uint64_t(cfg.runtime.seed);
  o.mean = data.mean;
  o.std = data.std;
  if (!train) return o;
  o.resized_crop = d.random_resized_crop;
  o.crop_padding = d.crop_padding;
  o.hflip = d.hflip;
  o.trivial_augment = d.trivial_augment;
  o.random_erasing = d.random_erasing;
  o.mixup_alpha = d.mixup_alpha;
  o.cutmix_alpha = d.cutmix_alpha;
  o.num_classes = d.num_classes;
  o.workers = d.workers;
  return o;
}

namespace {

// First line where two resolved configs differ, for the "different config" message.
std::string first_difference(const std::string& a, const std::string& b, const std::string& name_a = "stored",
                             const std::string& name_b = "requested") {
  std::istringstream sa(a), sb(b);
  std::string la, lb, section;
  while (true) {
    const bool ga = bool(std::getline(sa, la)), gb = bool(std::getline(sb, lb));
    if (!ga && !gb) return "";
    if (!la.empty() && la[0] != ' ') section = la;
    if (la != lb) return "in " + section + " " + name_a + " '" + la + "', " + name_b + " '" + lb + "'";
  }
}


// The resolved config without the keys that say where and how a run executes rather
// than what it computes: a run may resume with its data moved, on another device or
// with another thread count or memory format (these void the bitwise guarantee; see README).
std::string experiment_identity(const std::string& config_yaml, const fs::path& dir) {
  LoadOptions lo;
  lo.resolve_presets = false;
  Config c;
  try {
    c = load_config_text(config_yaml, (dir / "config.yaml").string(), {}, lo);
  } catch (const ConfigError& e) {
    throw CheckpointError(dir.string() + ": the stored config no longer loads: " + e.what());
  }
  c.data.root.clear();
  c.data.workers = 0;
  c.runtime.threads = 0;
  c.runtime.device = "auto";
  c.runtime.memory_format = "auto";
  c.runtime.dist_backend = "auto";
  c.runtime.dist_timeout_s = 300;
  c.runtime.max_memory_gb = 0;
  c.train.log_every = 1;
  return to_yaml(c);
}

// model.init_from: copies the file's weights into `model` (all but model.init_skip);
// returns the line for the log ("" without init_from).
std::string init_from_file(Classifier& model, const ModelConfig& m) {
  if (m.init_from.empty()) return "";
  if (!fs::is_regular_file(m.init_from))
    throw ConfigError("model.init_from: no such file '" + m.init_from +
                      "' (a state dict or TorchScript file; relative paths are from the working directory)");
  const size_t n = load_state_dict(model, read_state_dict(m.init_from), m.init_skip, m.init_from);
  return fmt::format("model: {} tensors initialised from {}{}; weights fingerprint {}", n, m.init_from,
                     m.init_skip.empty() ? "" : " (kept fresh: " + join(m.init_skip) + ")",
                     weights_fingerprint(model));
}

}  // namespace

Config load_run_config(const fs::path& run_dir, const std::vector<std::string>& overrides) {
  const fs::path file = run_dir / "config.yaml";
  if (!fs::exists(file)) throw CheckpointError(run_dir.string() + ": no config.yaml (is this a biaslab run directory?)");
  LoadOptions lo;
  lo.resolve_presets = false;
  return load_config(file.string(), overrides, lo);
}

EmaModel make_ema(const Config& cfg, Classifier& model, c10::Device device) {
  EmaModel out;
  if (cfg.train.ema_decay <= 0) return out;
  out.shadow = build_model(cfg.model, input_spec(cfg.data));
  out.shadow->to(device);
  if (uses_channels_last(cfg)) to_channels_last(*out.shadow);
  out.shadow->eval();
  out.ema = std::make_unique<Ema>(model, *out.shadow, cfg.train.ema_decay);
  return out;
}

namespace {

// The device of this process: in a distributed job on CUDA, `auto` and `cuda` mean the
// GPU of the local rank.
c10::Device process_device(const std::string& spec, const dist::DistEnv& env) {
  c10::Device device = select_device(spec);
  if (env.distributed() && device.is_cuda() && (spec == "auto" || spec == "cuda")) {
    const int count = int(torch::cuda::device_count());
    device = c10::Device(c10::kCUDA, c10::DeviceIndex(env.local_rank % std::max(count, 1)));
  }
  return device;
}

// What rank 0 decided about the run directory, for the other ranks of a distributed job.
struct RunPlan {
  std::string action = "train";  // train | complete | error
  std::string checkpoint;         // resume from this file ("" = fresh)
  std::string precision;          // resolved train.precision
  int exit_code = 0;              // action error: rank 0's exit status
  std::string message;

  std::string to_json() const {
    return json{{"action", action}, {"checkpoint", checkpoint}, {"precision", precision}, {"exit_code", exit_code},
                {"message", message}}
        .dump();
  }
  static RunPlan from_json(const std::string& text) {
    const json j = json::parse(text);
    return RunPlan{j.at("action"), j.at("checkpoint"), j.at("precision"), j.at("exit_code"), j.at("message")};
  }
};

}  // namespace

json run_training(const Config& given, const TrainRequest& req) {
  const auto wall_start = std::chrono::steady_clock::now();
  const fs::path dir = req.run_dir;
  const fs::path ckpt_dir = dir / "checkpoints";
  const dist::DistEnv env = dist::read_dist_env();
  // Everything that can fail on bad input (device, data files, model options,
  // checkpoints) happens before the run directory is written to.
  const c10::Device device = process_device(given.runtime.device, env);
  // The run computes in the resolved precision (train.precision: auto); config.yaml keeps
  // the config as given, so the run resumes and compares under its own identity.
  Config cfg = given;
  cfg.train.precision = resolve_precision(given.train.precision, device);
  require_precision_device(cfg.train.precision, device, "use bf16 on the CPU");
  std::string backend;
  if (env.distributed()) {
    backend = dist::resolve_backend(cfg.runtime.dist_backend, device);
    if (cfg.train.batch_size < env.world_size)
      throw ConfigError(fmt::format("train.batch_size: {} is the global batch, split across the {} ranks; it must "
                                    "be at least {}",
                                    cfg.train.batch_size, env.world_size, env.world_size));
    set_log_rank(env.rank);
  }
  // runtime.threads: auto shares the node's cores among its ranks.
  const int threads = set_threads(int(cfg.runtime.threads), env.local_world_size);
  seed_everything(uint64_t(cfg.runtime.seed));
  check_memory_budget(cfg, /*activations_in_host_memory=*/!device.is_cuda());
  Dataset data = load_dataset(cfg.data);
  if (env.distributed() && data.train.size() < env.world_size)
    throw ConfigError(fmt::format("data: {} training images cannot be split across {} ranks", data.train.size(),
                                  env.world_size));
  ClassifierPtr model = build_model(cfg.model, input_spec(cfg.data));
  // Pretrained weights (model.init_from) for a fresh run, checked before the run directory
  // is touched; a resumed run takes its weights from its checkpoint instead.
  const bool may_resume = req.require_checkpoint ||
                          (!req.force && fs::is_directory(dir / "checkpoints") && !fs::is_empty(dir / "checkpoints"));
  std::string init_note = may_resume ? "" : init_from_file(*model, cfg.model);
  // FLOPs per image (2 x multiply-accumulates, as `biaslab summary`), before any training.
  const int64_t flops_per_image = 2 * summarize(*model, cfg.data.channels, cfg.data.image_size).macs;
  model->to(device);
  const bool channels_last = uses_channels_last(cfg);
  if (channels_last) to_channels_last(*model);
  const int64_t params = count_parameters(*model);
  EmaModel averaged = make_ema(cfg, *model, device);
  ClassifierPtr shadow = averaged.shadow;
  std::unique_ptr<Ema> ema = std::move(averaged.ema);
  auto optimizer = make_optimizer(*model, cfg.optim);
  const std::string config_yaml = to_yaml(given);

  // A distributed job: every rank joins here. Rank 0 alone owns the run directory (lock,
  // config, logs, metrics, checkpoints); the others follow its plan and write nothing.
  std::unique_ptr<dist::Communicator> comm;
  if (env.distributed()) {
    comm = dist::Communicator::join(env, backend, device, std::chrono::seconds(cfg.runtime.dist_timeout_s));
    if (env.rank == 0)
      spdlog::info("distributed: {} ranks ({} per node), backend {}, launched by {}; global batch {} = {} per rank",
                   env.world_size, env.local_world_size, backend, env.launcher, cfg.train.batch_size,
                   fmt::format("{:.4g}", double(cfg.train.batch_size) / env.world_size));
  }
  const bool writer = !comm || comm->rank() == 0;
  if (comm) {
    // Every rank must train what rank 0 trains (config, data, model size): ranks launched
    // with other arguments, presets (BIASLAB_HOME) or data stop here, before anything is
    // written.
    const std::string experiment =
        fmt::format("{}data: {} train / {} val / {} test images; model: {} parameters\n",
                    experiment_identity(config_yaml, dir), data.train.size(), data.val.size(), data.test.size(), params);
    const std::string reference = comm->share("experiment", experiment);
    const bool differs = experiment != reference;
    if (differs)
      spdlog::error("rank {} would train another experiment than rank 0 ({}); launch every rank with the same "
                    "command, config, presets and data",
                    comm->rank(), first_difference(reference, experiment, "rank 0", "this rank"));
    const double differing = comm->sum({differs ? 1.0 : 0.0}, "comparing the ranks' experiments")[0];
    if (differing > 0)
      throw ConfigError(fmt::format("{} rank(s) would train another experiment than rank 0 (see their errors)",
                                    differing));
  }

  std::optional<FileLock> lock;
  std::optional<run_dir::ResumePoint> resume;
  RunPlan plan;
  auto prepare_run_dir = [&] {
    // Only a new, empty or biaslab's own folder; then one process per run directory at a
    // time (a sweep and a scheduler may both try).
    run_dir::claim(dir);
    fs::create_directories(dir);
    lock.emplace(dir / ".lock");
    if (!lock->held())
      throw CheckpointError("run directory " + dir.string() + " is in use by another biaslab process" +
                            (lock->holder_pid() ? " (pid " + std::to_string(lock->holder_pid()) + ")" : std::string()) +
                            "; wait for it to finish or stop it first");
    run_dir::remove_stale_temporaries(dir);  // of writes a killed process left

    // Fresh run, resume, or already complete?
    if (req.force) {
      if (run_dir::holds_run(dir)) spdlog::info("--force: discarding the earlier run in {}", dir.string());
      run_dir::wipe(dir);
    } else if (run_dir::holds_run(dir)) {
      resume = run_dir::find_resume_point(dir);
      if (req.require_checkpoint && !resume)
        throw CheckpointError("--resume " + dir.string() + ": no checkpoint to resume from");
      const std::string stored_yaml = resume ? resume->contents.config_yaml
                                             : (fs::exists(dir / "config.yaml") ? read_file(dir / "config.yaml") : "");
      const std::string stored = stored_yaml.empty() ? "" : experiment_identity(stored_yaml, dir);
      if (!stored.empty() && stored != experiment_identity(config_yaml, dir)) {
        // config.yaml edited by hand since the run started, or --set values?
        const std::string on_disk = fs::exists(dir / "config.yaml") ? read_file(dir / "config.yaml") : "";
        if (req.require_checkpoint && resume && !on_disk.empty() && experiment_identity(on_disk, dir) != stored)
          throw ConfigError("--resume " + dir.string() + ": " + (dir / "config.yaml").string() +
                            " differs from the config stored in " + resume->checkpoint.string() + " (" +
                            first_difference(stored, experiment_identity(on_disk, dir), "checkpoint", "config.yaml") +
                            "): it was edited after the run started; a run resumes with the config it started with, "
                            "so restore config.yaml, or train the edited config into another folder with "
                            "`biaslab train -c " + (dir / "config.yaml").string() + " --out NEW_DIR`");
        if (req.require_checkpoint)
          throw ConfigError("--resume " + dir.string() + ": the --set values change the run's config (" +
                            first_difference(stored, experiment_identity(config_yaml, dir)) +
                            "); a run resumes with the config it started with (only data.root, data.workers, "
                            "runtime.threads, runtime.device, runtime.memory_format, runtime.dist_backend, "
                            "runtime.dist_timeout_s, runtime.max_memory_gb and train.log_every may change)");
        throw ConfigError("run directory " + dir.string() + " holds a run of a different config (" +
                          first_difference(stored, experiment_identity(config_yaml, dir)) +
                          "); pass --force to replace it, or --out to choose another folder");
      }
      if (!resume) {
        spdlog::info("{} holds no checkpoint yet: starting the run over", dir.string());
        if (may_resume) {  // init_from was left for a resume that is not one: apply it (before the wipe)
          init_note = init_from_file(*model, cfg.model);
          if (ema) ema->reset_to_model();
        }
        run_dir::wipe(dir);
      }
    }
    if (req.require_checkpoint && !resume)
      throw CheckpointError("--resume " + dir.string() + ": no checkpoint to resume from");
    const bool complete = resume && resume->state.finished && fs::exists(dir / "summary.json") &&
                          resume->checkpoint.filename() == "last.pt";
    if (complete) {
      spdlog::info("{} is already complete ({} steps); nothing to do", dir.string(), resume->state.step);
      plan.action = "complete";
      return;
    }
    // train.precision: auto resolves once per run: a resume (possibly on another machine or
    // device) keeps the precision the run started with, as meta.json recorded it.
    if (resume && given.train.precision == "auto") {
      try {
        const std::string first = json::parse(read_file(dir / "meta.json")).value("precision", "");
        if ((first == "fp32" || first == "bf16") && first != cfg.train.precision) {
          spdlog::warn("train.precision: auto resolves to {} here, but the run started in {}: continuing in {}",
                       cfg.train.precision, first, first);
          cfg.train.precision = first;
        }
      } catch (const std::exception&) {
      }
    }
    if (resume) plan.checkpoint = fs::absolute(resume->checkpoint).string();  // the ranks' directories may differ
  };
  if (writer) {
    try {
      prepare_run_dir();
    } catch (const std::exception& e) {
      if (comm) {
        const auto* error = dynamic_cast<const Error*>(&e);
        comm->share("plan", RunPlan{"error", "", "", error ? error->exit_code() : 1, e.what()}.to_json());
        comm->barrier("sharing rank 0's plan");
      }
      throw;
    }
    plan.precision = cfg.train.precision;
    if (comm) comm->share("plan", plan.to_json());
  } else {
    plan = RunPlan::from_json(comm->share("plan", ""));
    cfg.train.precision = plan.precision;
  }
  // Every rank has the plan before any leaves (rank 0 may host the store the others read).
  if (comm) comm->barrier("sharing rank 0's plan");
  if (plan.action == "error" && !writer)
    throw DistError("rank 0 stopped before training: " + plan.message, plan.exit_code);
  if (plan.action == "complete") return writer ? json::parse(read_file(dir / "summary.json")) : json();

  TrainState state;
  if (!plan.checkpoint.empty()) {
    // Every rank reads the checkpoint rank 0 chose (the run directory must be visible to
    // all nodes): weights, optimizer state, RNG state and training state.
    const CheckpointContents contents =
        load_checkpoint(plan.checkpoint, *model, optimizer.get(), shadow.get(), /*restore_rng=*/true);
    state = writer ? resume->state : train_state_from_json(contents.state_json);
  }
  if (comm) {
    // Rank 0's weights everywhere (its init_from, its checkpoint).
    std::vector<torch::Tensor> tensors = model->parameters();
    for (const auto& b : model->buffers()) tensors.push_back(b);
    if (shadow) {
      for (const auto& p : shadow->parameters()) tensors.push_back(p);
      for (const auto& b : shadow->buffers()) tensors.push_back(b);
    }
    comm->broadcast(tensors, "the initial weights");
    // A broadcast's sender may finish first: every rank has read the checkpoint before
    // rank 0 writes the next one.
    comm->barrier("loading the checkpoint");
  }

  std::optional<LogFileCloser> closer;
  const json distributed = comm ? json{{"world_size", env.world_size},
                                       {"ranks_per_node", env.local_world_size},
                                       {"backend", backend},
                                       {"launcher", env.launcher}}
                                : json(nullptr);
  if (writer) {
    json meta = {{"biaslab_version", build::kVersion}, {"git_commit", build::kGitCommit},
            {"libtorch_version", compat::torch_version()}, {"threads", threads}, {"device", device.str()},
            {"seed", cfg.runtime.seed}, {"subset_seed", cfg.data.subset_seed},
            {"precision", cfg.train.precision},
            {"memory_format", channels_last ? "channels_last" : "contiguous"}, {"distributed", distributed},
            {"host", hostname()}, {"started", now_iso8601()},
            {"command", req.command_line},
            {"determinism", "bitwise reproducible on the CPU for the same config, seed, thread count, number of "
                            "ranks, LibTorch build and machine type"}};
    if (resume) {
      try {
        json old = json::parse(read_file(dir / "meta.json"));
        old["resumed"].push_back({{"at", now_iso8601()}, {"step", state.step}, {"from", resume->checkpoint.filename()},
                                  {"command", req.command_line}, {"threads", threads}, {"host", hostname()},
                                  {"device", device.str()}, {"precision", cfg.train.precision},
                                  {"memory_format", channels_last ? "channels_last" : "contiguous"},
                                  {"distributed", distributed}});
        meta = old;
      } catch (const std::exception&) {
        meta["resumed"] = json::array({{{"at", now_iso8601()}, {"step", state.step}}});
      }
    }
    // meta.json first: it is what marks the folder as a biaslab run directory (run_dir::is_run_dir).
    atomic_write(dir / "meta.json", meta.dump(2) + "\n");
    fs::create_directories(ckpt_dir);
    log_to_file((dir / "train.log").string());
    closer.emplace();
    if (resume)
      spdlog::info("resuming {} from {} (step {}, epoch {})", dir.string(), resume->checkpoint.string(), state.step,
                   state.epoch);
    else
      spdlog::info("run {} -> {} (libtorch {}, {} thread(s){}, device {}, {}{}{})", cfg.name, dir.string(),
                   compat::torch_version(), threads, comm ? " per rank" : "", device.str(), cfg.train.precision,
                   given.train.precision == "auto" ? " (train.precision: auto)" : "",
                   channels_last ? ", channels-last" : "");
    atomic_write(dir / "config.yaml", config_yaml);
    spdlog::info("data: {} train / {} val / {} test images, {}x{}x{}, {} classes", data.train.size(),
                 data.val.size(), data.test.size(), cfg.data.channels, cfg.data.image_size, cfg.data.image_size,
                 cfg.data.num_classes);
    if (!data.skipped.empty()) {
      spdlog::warn("data: skipped {} image(s) OpenCV could not decode (data.on_bad_image: skip):", data.skipped.size());
      for (const auto& f : data.skipped) spdlog::warn("  skipped {}", f);
      std::string list;
      for (const auto& f : data.skipped) list += f + "\n";
      atomic_write(dir / "skipped_images.txt", list);
    }
    spdlog::info("model: {} ({}), {} parameters", cfg.model.preset.empty() ? cfg.model.family : cfg.model.preset,
                 cfg.model.family, params);
    if (!init_note.empty()) spdlog::info("{}", init_note);
  }

  LoaderOptions train_options = loader_options(cfg, data, cfg.train.batch_size, true);
  if (comm) {
    train_options.shard = comm->rank();
    train_options.shards = comm->world_size();
  }
  Loader train(data.train, train_options);
  Loader val(data.val, loader_options(cfg, data, cfg.train.eval_batch_size, false));
  Loader test(data.test, loader_options(cfg, data, cfg.train.eval_batch_size, false));
  LrSchedule schedule(cfg.sched, cfg.optim.lr, planned_steps(cfg.train, train.batches_per_epoch()));
  const bool with_ema = ema != nullptr;

  // metrics.csv and timing.csv always agree with the state training continues from.
  std::string timing_csv;
  TrainerCallbacks callbacks;
  if (writer) {
    atomic_write(dir / "metrics.csv", run_dir::metrics_csv(state, with_ema));
    timing_csv = run_dir::kept_timing_rows(dir / "timing.csv", state.epoch);
    atomic_write(dir / "timing.csv", timing_csv);
    callbacks.on_epoch_end = [&](const TrainState& s) {
      atomic_write(dir / "metrics.csv", run_dir::metrics_csv(s, with_ema));
    };
    callbacks.save_checkpoint = [&](const std::string& name, const TrainState& s) {
      const fs::path path = ckpt_dir / (name + ".pt");
      // Keep the previous `last` until the new one is complete: a fallback if it is lost.
      if (name == "last" && fs::exists(path)) fs::rename(path, ckpt_dir / "last.prev.pt");
      save_checkpoint(path.string(), *model, optimizer.get(), shadow.get(),
                      CheckpointContents{config_yaml, train_state_to_json(s), "", ""});
      spdlog::debug("checkpoint {} written (step {})", path.string(), s.step);
    };
    callbacks.remove_checkpoint = [&](const std::string& name) { fs::remove(ckpt_dir / (name + ".pt")); };
    callbacks.on_timing = [&](const EpochTiming& t) {
      timing_csv += run_dir::timing_row(t);
      atomic_write(dir / "timing.csv", timing_csv);
    };
  }
  Trainer trainer(*model, *optimizer, schedule, train, data.val.size() > 0 ? &val : nullptr, test, cfg.train, device,
                  callbacks, ema.get(), comm.get());
  // Resumed from last.prev.pt or best.pt: make `last` the state training continues from
  // (for a finished run, fit() does nothing and this is the final `last`).
  if (writer && resume && resume->checkpoint.filename() != "last.pt") callbacks.save_checkpoint("last", state);
  if (comm) trainer.set_rank_seed(uint64_t(cfg.runtime.seed));
  install_stop_handlers();
  trainer.fit(state);
  if (const int sig = stop_signal(); sig != 0 && writer)
    spdlog::warn("signal {} arrived during the final evaluation: the run was complete, so it is finished (summary "
                 "written, exit status 0) rather than stopped",
                 sig);
  if (!writer) return json();

  json summary = run_dir::summary(cfg, state, trainer.selection_metric(), params, data, threads, device);
  summary["model"]["flops_per_image"] = flops_per_image;
  summary["weights_fingerprint"] = weights_fingerprint(*model);
  if (shadow) summary["ema_weights_fingerprint"] = weights_fingerprint(*shadow);
  if (comm) summary["distributed"] = distributed;
  atomic_write(dir / "summary.json", summary.dump(2) + "\n");
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  json timing = run_dir::timing_summary(timing_csv, wall_s, state.images_seen);
  atomic_write(dir / "timing.json", timing.dump(2) + "\n");
  const auto& last = state.history.back();
  spdlog::info("done: final test acc {:.2f}%, best {} {:.2f}% at epoch {}; {:.0f}s training", 100 * last.test.acc,
               trainer.selection_metric(), 100 * state.best_metric, state.best_epoch,
               timing["train_time_s"].get<double>());
  return summary;
}

fs::path resolve_checkpoint(const fs::path& target, const std::string& name) {
  if (!fs::is_directory(target)) {
    if (!fs::exists(target)) throw CheckpointError(target.string() + ": no such run directory or checkpoint file");
    return target;
  }
  const fs::path checkpoint = target / "checkpoints" / (name + ".pt");
  if (!fs::exists(checkpoint))
    throw CheckpointError(target.string() + ": no checkpoints/" + name + ".pt (is this a biaslab run directory?)");
  // The checkpoint must be this run's: one copied from another run (or a config.yaml
  // edited since) would be evaluated, exported or analysed under the wrong name.
  if (fs::exists(target / "config.yaml")) {
    const std::string run = experiment_identity(read_file(target / "config.yaml"), target);
    const std::string stored = experiment_identity(read_checkpoint_meta(checkpoint.string()).config_yaml, target);
    if (run != stored)
      throw CheckpointError(checkpoint.string() + " does not belong to the run in " + target.string() +
                            ": the config stored in the checkpoint differs from config.yaml (" +
                            first_difference(run, stored, "config.yaml", "checkpoint") +
                            "); it was copied from another run, or config.yaml was edited after training");
  }
  return checkpoint;
}

TrainedModel load_trained_model(const fs::path& checkpoint, bool ema, const std::vector<std::string>& overrides) {
  const CheckpointContents meta = read_checkpoint_meta(checkpoint.string());
  LoadOptions lo;
  lo.resolve_presets = false;
  TrainedModel out;
  out.cfg = load_config_text(meta.config_yaml, checkpoint.string() + " (stored config)", overrides, lo);
  if (ema && out.cfg.train.ema_decay <= 0)
    throw ConfigError("--ema: " + checkpoint.string() + " was trained without EMA (train.ema_decay is 0)");
  out.model = build_model(out.cfg.model, input_spec(out.cfg.data));
  if (ema) {
    ClassifierPtr trained = build_model(out.cfg.model, input_spec(out.cfg.data));
    load_checkpoint(checkpoint.string(), *trained, nullptr, out.model.get());
  } else {
    load_checkpoint(checkpoint.string(), *out.model, nullptr);
  }
  try {
    const TrainState state = train_state_from_json(meta.state_json);
    out.epoch = state.epoch;
    out.step = state.step;
  } catch (const std::exception& e) {
    throw CheckpointError(checkpoint.string() + ": " + e.what());
  }
  out.biaslab_version = meta.biaslab_version;
  return out;
}

json read_run_summary(const fs::path& checkpoint) {
  const fs::path file = checkpoint.parent_path().parent_path() / "summary.json";
  if (checkpoint.parent_path().filename() != "checkpoints" || !fs::exists(file)) return nullptr;
  try {
    return json::parse(read_file(file));
  } catch (const json::exception& e) {
    throw CheckpointError(file.string() + ": unreadable: " + e.what());
  }
}

json recorded_test_metrics(const fs::path& checkpoint, int64_t epoch, bool ema) {
  const std::string stem = checkpoint.stem().string();
  if (stem != "best" && stem != "last") return nullptr;
  const json summary = read_run_summary(checkpoint);
  if (summary.is_null()) return nullptr;
  const json entry = summary.value(stem == "best" ? "best" : "final", json::object());
  const std::string prefix = ema ? "ema_test_" : "test_";
  // The recorded numbers belong to this checkpoint only if it is the one summary.json describes.
  if (entry.value("epoch", int64_t(-1)) != epoch || !entry.contains(prefix + "acc") || !entry.contains(prefix + "loss"))
    return nullptr;
  return {{"loss", entry[prefix + "loss"]}, {"acc", entry[prefix + "acc"]}};
}

EvalReport evaluate_run(const EvalRequest& req) {
  if (req.checkpoint != "best" && req.checkpoint != "last")
    throw ConfigError("--checkpoint: '" + req.checkpoint + "' is not one of best, last");
  EvalReport report;
  const fs::path checkpoint = resolve_checkpoint(req.target, req.checkpoint);
  report.checkpoint = checkpoint.string();
  TrainedModel trained = load_trained_model(checkpoint, req.ema, req.overrides);
  const Config& cfg = trained.cfg;
  const c10::Device device = select_device(cfg.runtime.device);
  set_threads(int(cfg.runtime.threads));
  ClassifierPtr model = trained.model;
  model->to(device);
  if (uses_channels_last(cfg)) to_channels_last(*model);  // the layout it was trained and evaluated in
  Dataset data = load_dataset(cfg.data);
  Loader test(data.test, loader_options(cfg, data, cfg.train.eval_batch_size, false));
  // The precision the run computed in (summary.json) when the config says auto.
  std::string precision = resolve_precision(cfg.train.precision, device);
  if (const json s = read_run_summary(checkpoint); cfg.train.precision == "auto" && s.is_object())
    precision = s.value("precision", precision);
  require_precision_device(precision, device, "evaluate with --set train.precision=fp32 (or bf16)");
  report.test = evaluate(*model, test, device, precision);
  report.weights_fingerprint = weights_fingerprint(*model);
  report.epoch = trained.epoch;
  report.step = trained.step;
  report.recorded = recorded_test_metrics(checkpoint, trained.epoch, req.ema);
  return report;
}

}  // namespace biaslab
