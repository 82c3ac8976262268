#include "engine/experiment.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "config/loader.h"
#include "core/build_info.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/logging.h"
#include "core/runtime.h"
#include "core/signals.h"
#include "core/torch_compat.h"
#include "data/dataset.h"
#include "engine/checkpoint.h"
#include "engine/ema.h"
#include "engine/optimizer.h"
#include "engine/trainer.h"
#include "models/registry.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string> kRunFiles = {"config.yaml", "meta.json",   "metrics.csv", "summary.json",
                                            "timing.csv",  "timing.json", "train.log"};
// Where a run can resume from, most recent first.
const std::vector<std::string> kResumeCandidates = {"last.pt", "last.prev.pt", "best.pt"};

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

InputSpec input_spec(const DataConfig& d) { return {d.channels, d.image_size, d.num_classes}; }

LoaderOptions loader_options(const Config& cfg, int64_t batch, bool train) {
  LoaderOptions o;
  o.batch_size = batch;
  o.shuffle = train;
  o.drop_last = train;
  o.seed = uint64_t(cfg.runtime.seed);
  o.crop_padding = train ? cfg.data.crop_padding : 0;
  o.hflip = train && cfg.data.hflip;
  o.mean = cfg.data.mean;
  o.std = cfg.data.std;
  return o;
}

// First line where two resolved configs differ, for the "different config" message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb, section;
  while (true) {
    const bool ga = bool(std::getline(sa, la)), gb = bool(std::getline(sb, lb));
    if (!ga && !gb) return "";
    if (!la.empty() && la[0] != ' ') section = la;
    if (la != lb) return "in " + section + " stored '" + la + "', requested '" + lb + "'";
  }
}

bool has_run_files(const fs::path& dir) {
  for (const auto& f : kRunFiles)
    if (fs::exists(dir / f)) return true;
  return fs::exists(dir / "checkpoints");
}

void wipe_run(const fs::path& dir) {
  for (const auto& f : kRunFiles) fs::remove(dir / f);
  fs::remove_all(dir / "checkpoints");
}

struct ResumePoint {
  fs::path checkpoint;
  CheckpointContents contents;
  TrainState state;
};

// The most advanced checkpoint that verifies; corrupt ones are reported and skipped.
std::optional<ResumePoint> find_resume_point(const fs::path& dir) {
  std::optional<ResumePoint> best;
  std::vector<std::string> problems;
  for (const auto& name : kResumeCandidates) {
    const fs::path p = dir / "checkpoints" / name;
    if (!fs::exists(p)) continue;
    try {
      ResumePoint r{p, read_checkpoint_meta(p.string()), {}};
      r.state = train_state_from_json(r.contents.state_json);
      if (!best || r.state.step > best->state.step) best = std::move(r);
    } catch (const std::exception& e) {
      problems.push_back(e.what());
      spdlog::warn("skipping unusable checkpoint: {}", e.what());
    }
  }
  if (!best && !problems.empty())
    throw CheckpointError("no usable checkpoint in " + (dir / "checkpoints").string() + ": " + [&] {
      std::string all;
      for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
      return all;
    }() + " (pass --force to start over)");
  return best;
}

std::string csv_header(bool ema) {
  return std::string("epoch,step,lr,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,") +
         (ema ? "ema_val_loss,ema_val_acc,ema_test_loss,ema_test_acc," : "") + "skipped_steps\n";
}

std::string num(double v) { return fmt::format("{:.8g}", v); }

std::string csv_rows(const TrainState& s, bool ema) {
  std::string out = csv_header(ema);
  for (const auto& r : s.history) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},", r.epoch, r.step, num(r.lr), num(r.train_loss), num(r.train_acc),
                       r.has_val ? num(r.val.loss) : "", r.has_val ? num(r.val.acc) : "", num(r.test.loss),
                       num(r.test.acc));
    if (ema)
      out += fmt::format("{},{},{},{},", r.has_val ? num(r.ema_val.loss) : "", r.has_val ? num(r.ema_val.acc) : "",
                         num(r.ema_test.loss), num(r.ema_test.acc));
    out += fmt::format("{}\n", r.skipped_steps);
  }
  return out;
}

json epoch_json(const EpochRecord& r) {
  json j = {{"epoch", r.epoch}, {"step", r.step}, {"train_loss", r.train_loss}, {"train_acc", r.train_acc},
            {"test_loss", r.test.loss}, {"test_acc", r.test.acc}};
  if (r.has_val) j.update({{"val_loss", r.val.loss}, {"val_acc", r.val.acc}});
  if (r.has_ema) {
    j.update({{"ema_test_loss", r.ema_test.loss}, {"ema_test_acc", r.ema_test.acc}});
    if (r.has_val) j.update({{"ema_val_loss", r.ema_val.loss}, {"ema_val_acc", r.ema_val.acc}});
  }
  return j;
}

// summary.json: deterministic (a function of the config and the training state only).
json make_summary(const Config& cfg, const TrainState& s, const std::string& selection, int64_t params,
                  const Dataset& data, int threads, const c10::Device& device) {
  const auto& last = s.history.back();
  const auto& best = s.history.at(size_t(s.best_epoch - 1));
  return {{"name", cfg.name},
          {"model", {{"family", cfg.model.family}, {"preset", cfg.model.preset}, {"parameters", params}}},
          {"data",
           {{"preset", cfg.data.preset},
            {"train_size", data.train.size()},
            {"val_size", data.val.size()},
            {"test_size", data.test.size()},
            {"train_fraction", cfg.data.train_fraction},
            {"train_per_class", cfg.data.train_per_class},
            {"subset_seed", cfg.data.subset_seed}}},
          {"epochs", s.epoch},
          {"steps", s.step},
          {"images_seen", s.images_seen},
          {"skipped_steps", s.skipped_steps},
          {"stopped_early", s.stopped_early},
          {"selection_metric", selection},
          {"final", epoch_json(last)},
          {"best", epoch_json(best)},
          {"precision", cfg.train.precision},
          {"threads", threads},
          {"device", device.str()},
          {"seed", cfg.runtime.seed}};
}

// timing.csv keeps one row per completed epoch, whichever process ran it.
std::string kept_timing_rows(const fs::path& file, int64_t up_to_epoch) {
  std::string out = "epoch,train_s,eval_s,images_per_s\n";
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    try {
      if (std::stoll(line.substr(0, line.find(','))) <= up_to_epoch) out += line + "\n";
    } catch (const std::exception&) {
    }
  }
  return out;
}

json timing_summary(const std::string& timing_csv, double wall_s, int64_t images_seen) {
  double train_s = 0, eval_s = 0;
  std::istringstream in(timing_csv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string epoch, t, e;
    std::getline(row, epoch, ',');
    std::getline(row, t, ',');
    std::getline(row, e, ',');
    train_s += std::stod(t);
    eval_s += std::stod(e);
  }
  return {{"train_time_s", train_s},
          {"eval_time_s", eval_s},
          {"train_images_per_s", train_s > 0 ? double(images_seen) / train_s : 0.0},
          {"last_process_wall_time_s", wall_s}};
}

}  // namespace

Config load_run_config(const fs::path& run_dir, const std::vector<std::string>& overrides) {
  const fs::path file = run_dir / "config.yaml";
  if (!fs::exists(file)) throw CheckpointError(run_dir.string() + ": no config.yaml (is this a biaslab run directory?)");
  LoadOptions lo;
  lo.resolve_presets = false;
  return load_config(file.string(), overrides, lo);
}

json run_training(const Config& cfg, const TrainRequest& req) {
  const auto wall_start = std::chrono::steady_clock::now();
  const fs::path dir = req.run_dir;
  const fs::path ckpt_dir = dir / "checkpoints";
  // Everything that can fail on bad input (device, data files, model options,
  // checkpoints) happens before the run directory is written to.
  const c10::Device device = select_device(cfg.runtime.device);
  if (cfg.train.precision == "fp16" && !device.is_cuda())
    throw ConfigError("train.precision: fp16 (with loss scaling) needs a CUDA device, runtime.device resolved to " +
                      device.str() + "; use bf16 on the CPU");
  const int threads = set_threads(int(cfg.runtime.threads));
  seed_everything(uint64_t(cfg.runtime.seed));
  Dataset data = load_dataset(cfg.data);
  ClassifierPtr model = build_model(cfg.model, input_spec(cfg.data));
  model->to(device);
  const int64_t params = count_parameters(*model);
  ClassifierPtr shadow;
  std::unique_ptr<Ema> ema;
  if (cfg.train.ema_decay > 0) {
    shadow = build_model(cfg.model, input_spec(cfg.data));
    shadow->to(device);
    shadow->eval();
    ema = std::make_unique<Ema>(*model, *shadow, cfg.train.ema_decay);
  }
  auto optimizer = make_optimizer(*model, cfg.optim);
  const std::string config_yaml = to_yaml(cfg);

  // Fresh run, resume, or already complete?
  std::optional<ResumePoint> resume;
  if (req.force) {
    if (has_run_files(dir)) spdlog::info("--force: discarding the earlier run in {}", dir.string());
    wipe_run(dir);
  } else if (has_run_files(dir)) {
    resume = find_resume_point(dir);
    const std::string stored = resume ? resume->contents.config_yaml
                                      : (fs::exists(dir / "config.yaml") ? read_file(dir / "config.yaml") : "");
    if (!stored.empty() && stored != config_yaml)
      throw ConfigError("run directory " + dir.string() + " holds a run of a different config (" +
                        first_difference(stored, config_yaml) +
                        "); pass --force to replace it, or --out to choose another folder");
    if (!resume) {
      spdlog::info("{} holds no checkpoint yet: starting the run over", dir.string());
      wipe_run(dir);
    }
  }
  if (req.require_checkpoint && !resume)
    throw CheckpointError("--resume " + dir.string() + ": no checkpoint to resume from");
  if (resume && resume->state.finished && fs::exists(dir / "summary.json")) {
    spdlog::info("{} is already complete ({} steps); nothing to do", dir.string(), resume->state.step);
    return json::parse(read_file(dir / "summary.json"));
  }

  TrainState state;
  if (resume) {
    load_checkpoint(resume->checkpoint.string(), *model, optimizer.get(), shadow.get(), /*restore_rng=*/true);
    state = resume->state;
    // Temporary files of checkpoint writes that a crash interrupted.
    for (const auto& e : fs::directory_iterator(ckpt_dir))
      if (e.path().filename().string().find(".tmp.") != std::string::npos) fs::remove(e.path());
  }
  fs::create_directories(ckpt_dir);
  log_to_file((dir / "train.log").string());
  struct LogFileCloser {
    ~LogFileCloser() { stop_log_file(); }
  } closer;

  json meta = {{"biaslab_version", build::kVersion}, {"git_commit", build::kGitCommit},
               {"libtorch_version", compat::torch_version()}, {"threads", threads}, {"device", device.str()},
               {"seed", cfg.runtime.seed}, {"subset_seed", cfg.data.subset_seed},
               {"precision", cfg.train.precision}, {"host", hostname()}, {"started", now_iso8601()},
               {"command", req.command_line},
               {"determinism", "bitwise reproducible on the CPU for the same config, seed, thread count, LibTorch "
                               "build and machine type"}};
  if (resume) {
    try {
      json old = json::parse(read_file(dir / "meta.json"));
      old["resumed"].push_back({{"at", now_iso8601()}, {"step", state.step}, {"from", resume->checkpoint.filename()},
                                {"command", req.command_line}, {"threads", threads}, {"host", hostname()}});
      meta = old;
    } catch (const std::exception&) {
      meta["resumed"] = json::array({{{"at", now_iso8601()}, {"step", state.step}}});
    }
    spdlog::info("resuming {} from {} (step {}, epoch {})", dir.string(), resume->checkpoint.string(), state.step,
                 state.epoch);
  } else {
    atomic_write(dir / "config.yaml", config_yaml);
    spdlog::info("run {} -> {} (libtorch {}, {} thread(s), device {})", cfg.name, dir.string(),
                 compat::torch_version(), threads, device.str());
  }
  atomic_write(dir / "meta.json", meta.dump(2) + "\n");
  spdlog::info("data: {} train / {} val / {} test images, {}x{}x{}, {} classes", data.train.size(), data.val.size(),
               data.test.size(), cfg.data.channels, cfg.data.image_size, cfg.data.image_size, cfg.data.num_classes);
  spdlog::info("model: {} ({}), {} parameters", cfg.model.preset.empty() ? cfg.model.family : cfg.model.preset,
               cfg.model.family, params);

  Loader train(data.train, loader_options(cfg, cfg.train.batch_size, true));
  Loader val(data.val, loader_options(cfg, cfg.train.eval_batch_size, false));
  Loader test(data.test, loader_options(cfg, cfg.train.eval_batch_size, false));
  LrSchedule schedule(cfg.sched, cfg.optim.lr, planned_steps(cfg.train, train.batches_per_epoch()));
  const bool with_ema = ema != nullptr;

  // metrics.csv and timing.csv always agree with the state training continues from.
  atomic_write(dir / "metrics.csv", csv_rows(state, with_ema));
  std::string timing_csv = kept_timing_rows(dir / "timing.csv", state.epoch);
  atomic_write(dir / "timing.csv", timing_csv);

  TrainerCallbacks callbacks;
  callbacks.on_epoch_end = [&](const TrainState& s) { atomic_write(dir / "metrics.csv", csv_rows(s, with_ema)); };
  callbacks.save_checkpoint = [&](const std::string& name, const TrainState& s) {
    const fs::path path = ckpt_dir / (name + ".pt");
    // Keep the previous `last` until the new one is complete: a fallback if it is lost.
    if (name == "last" && fs::exists(path)) fs::rename(path, ckpt_dir / "last.prev.pt");
    save_checkpoint(path.string(), *model, optimizer.get(), shadow.get(),
                    CheckpointContents{config_yaml, train_state_to_json(s), "", ""});
  };
  callbacks.remove_checkpoint = [&](const std::string& name) { fs::remove(ckpt_dir / (name + ".pt")); };
  callbacks.on_timing = [&](const EpochTiming& t) {
    timing_csv += fmt::format("{},{:.3f},{:.3f},{:.1f}\n", t.epoch, t.train_s, t.eval_s, t.images_per_s);
    atomic_write(dir / "timing.csv", timing_csv);
  };
  Trainer trainer(*model, *optimizer, schedule, train, data.val.size() > 0 ? &val : nullptr, test, cfg.train, device,
                  callbacks, ema.get());
  install_stop_handlers();
  trainer.fit(state);

  json summary = make_summary(cfg, state, trainer.selection_metric(), params, data, threads, device);
  summary["weights_fingerprint"] = weights_fingerprint(*model);
  if (shadow) summary["ema_weights_fingerprint"] = weights_fingerprint(*shadow);
  atomic_write(dir / "summary.json", summary.dump(2) + "\n");
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  json timing = timing_summary(timing_csv, wall_s, state.images_seen);
  atomic_write(dir / "timing.json", timing.dump(2) + "\n");
  const auto& last = state.history.back();
  spdlog::info("done: final test acc {:.2f}%, best {} {:.2f}% at epoch {}; {:.0f}s training", 100 * last.test.acc,
               trainer.selection_metric(), 100 * state.best_metric, state.best_epoch,
               timing["train_time_s"].get<double>());
  return summary;
}

EvalReport evaluate_run(const EvalRequest& req) {
  if (req.checkpoint != "best" && req.checkpoint != "last")
    throw ConfigError("--checkpoint: '" + req.checkpoint + "' is not one of best, last");
  EvalReport report;
  fs::path checkpoint = req.target;
  json summary;
  if (fs::is_directory(req.target)) {
    checkpoint = req.target / "checkpoints" / (req.checkpoint + ".pt");
    if (!fs::exists(checkpoint))
      throw CheckpointError(req.target.string() + ": no checkpoints/" + req.checkpoint +
                            ".pt (is this a biaslab run directory?)");
    if (fs::exists(req.target / "summary.json")) {
      try {
        summary = json::parse(read_file(req.target / "summary.json"));
      } catch (const json::exception& e) {
        throw CheckpointError((req.target / "summary.json").string() + ": unreadable: " + e.what());
      }
    }
  }
  report.checkpoint = checkpoint.string();
  const CheckpointContents meta = read_checkpoint_meta(checkpoint.string());
  LoadOptions lo;
  lo.resolve_presets = false;
  const Config cfg = load_config_text(meta.config_yaml, checkpoint.string() + " (stored config)", req.overrides, lo);
  if (req.ema && cfg.train.ema_decay <= 0)
    throw ConfigError("--ema: " + checkpoint.string() + " was trained without EMA (train.ema_decay is 0)");

  const c10::Device device = select_device(cfg.runtime.device);
  set_threads(int(cfg.runtime.threads));
  ClassifierPtr model = build_model(cfg.model, input_spec(cfg.data));
  if (req.ema) {
    ClassifierPtr trained = build_model(cfg.model, input_spec(cfg.data));
    load_checkpoint(checkpoint.string(), *trained, nullptr, model.get());
  } else {
    load_checkpoint(checkpoint.string(), *model, nullptr);
  }
  model->to(device);
  Dataset data = load_dataset(cfg.data);
  Loader test(data.test, loader_options(cfg, cfg.train.eval_batch_size, false));
  report.test = evaluate(*model, test, device, cfg.train.precision);
  report.weights_fingerprint = weights_fingerprint(*model);

  TrainState state;
  try {
    state = train_state_from_json(meta.state_json);
  } catch (const std::exception& e) {
    throw CheckpointError(checkpoint.string() + ": " + e.what());
  }
  report.epoch = state.epoch;
  report.step = state.step;
  if (!summary.is_null()) {
    const std::string entry = req.checkpoint == "best" ? "best" : "final";
    const std::string prefix = req.ema ? "ema_test_" : "test_";
    // The recorded numbers belong to this checkpoint only if it is the one summary.json describes.
    const json& e = summary.at(entry);
    if (e.at("epoch").get<int64_t>() == state.epoch && e.contains(prefix + "acc"))
      report.recorded = {{"loss", e.at(prefix + "loss")}, {"acc", e.at(prefix + "acc")}};
  }
  return report;
}

}  // namespace biaslab
