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
#include "core/torch_compat.h"
#include "data/dataset.h"
#include "engine/checkpoint.h"
#include "engine/optimizer.h"
#include "engine/trainer.h"
#include "models/registry.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::vector<std::string> kRunFiles = {"config.yaml", "meta.json", "metrics.csv", "summary.json", "train.log"};

void prepare_run_dir(const fs::path& dir, bool force) {
  bool occupied = fs::exists(dir / "checkpoints");
  for (const auto& f : kRunFiles) occupied = occupied || fs::exists(dir / f);
  if (occupied) {
    if (!force)
      throw ConfigError("run directory " + dir.string() +
                        " already holds a run; pass --force to replace it or --out to choose another folder");
    for (const auto& f : kRunFiles) fs::remove(dir / f);
    fs::remove_all(dir / "checkpoints");
  }
  fs::create_directories(dir / "checkpoints");
}

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

std::string csv_header() {
  return "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,epoch_time_s,eval_time_s,"
         "images_per_s\n";
}

std::string csv_row(const EpochRecord& r) {
  auto num = [](double v) { return fmt::format("{:.6g}", v); };
  return fmt::format("{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.1f}\n", r.epoch, r.step, num(r.lr),
                     num(r.train_loss), num(r.train_acc), r.has_val ? num(r.val_loss) : "",
                     r.has_val ? num(r.val_acc) : "", num(r.test_loss), num(r.test_acc), r.epoch_time_s,
                     r.eval_time_s, r.images_per_s);
}

json epoch_json(const EpochRecord& r) {
  json j = {{"epoch", r.epoch}, {"step", r.step}, {"train_loss", r.train_loss}, {"train_acc", r.train_acc},
            {"test_loss", r.test_loss}, {"test_acc", r.test_acc}};
  if (r.has_val) {
    j["val_loss"] = r.val_loss;
    j["val_acc"] = r.val_acc;
  }
  return j;
}

}  // namespace

json run_training(const Config& cfg, const TrainRequest& req) {
  const auto wall_start = std::chrono::steady_clock::now();
  const fs::path dir = req.run_dir;
  // Everything that can fail on bad input (device, data files, model options) happens
  // before the run directory is touched, so a failed start leaves nothing behind.
  const c10::Device device = select_device(cfg.runtime.device);
  const int threads = set_threads(int(cfg.runtime.threads));
  seed_everything(uint64_t(cfg.runtime.seed));
  Dataset data = load_dataset(cfg.data);
  ClassifierPtr model = build_model(cfg.model, input_spec(cfg.data));
  model->to(device);
  const int64_t params = count_parameters(*model);

  prepare_run_dir(dir, req.force);
  log_to_file((dir / "train.log").string());
  struct LogFileCloser {
    ~LogFileCloser() { stop_log_file(); }
  } closer;
  const std::string config_yaml = to_yaml(cfg);
  atomic_write(dir / "config.yaml", config_yaml);
  json meta = {{"biaslab_version", build::kVersion},
               {"git_commit", build::kGitCommit},
               {"libtorch_version", compat::torch_version()},
               {"threads", threads},
               {"device", device.str()},
               {"seed", cfg.runtime.seed},
               {"subset_seed", cfg.data.subset_seed},
               {"precision", cfg.train.precision},
               {"host", hostname()},
               {"started", now_iso8601()},
               {"command", req.command_line}};
  atomic_write(dir / "meta.json", meta.dump(2) + "\n");
  spdlog::info("run {} -> {} (libtorch {}, {} thread(s), device {})", cfg.name, dir.string(),
               compat::torch_version(), threads, device.str());
  spdlog::info("data: {} train / {} val / {} test images, {}x{}x{}, {} classes", data.train.size(), data.val.size(),
               data.test.size(), cfg.data.channels, cfg.data.image_size, cfg.data.image_size, cfg.data.num_classes);
  spdlog::info("model: {} ({}), {} parameters", cfg.model.preset.empty() ? cfg.model.family : cfg.model.preset,
               cfg.model.family, params);
  Loader train(data.train, loader_options(cfg, cfg.train.batch_size, true));
  Loader val(data.val, loader_options(cfg, cfg.train.eval_batch_size, false));
  Loader test(data.test, loader_options(cfg, cfg.train.eval_batch_size, false));
  auto optimizer = make_optimizer(*model, cfg.optim);
  LrSchedule schedule(cfg.sched, cfg.optim.lr, planned_steps(cfg.train, train.batches_per_epoch()));

  std::string csv = csv_header();
  atomic_write(dir / "metrics.csv", csv);
  TrainerCallbacks callbacks;
  callbacks.on_epoch = [&](const EpochRecord& r) {
    csv += csv_row(r);
    atomic_write(dir / "metrics.csv", csv);
  };
  callbacks.save_checkpoint = [&](const std::string& name, const TrainPosition& p) {
    CheckpointMeta m;
    m.epoch = p.epoch;
    m.step = p.step;
    m.best_metric = p.best_metric;
    m.best_epoch = p.best_epoch;
    m.config_yaml = config_yaml;
    save_checkpoint((dir / "checkpoints" / (name + ".pt")).string(), *model, optimizer.get(), m);
  };
  Trainer trainer(*model, *optimizer, schedule, train, data.val.size() > 0 ? &val : nullptr, test, cfg.train,
                  device, callbacks);
  TrainResult result = trainer.fit();

  const auto& last = result.history.back();
  const auto& best = result.history.at(size_t(result.final_position.best_epoch - 1));
  json summary = {
      {"name", cfg.name},
      {"model", {{"family", cfg.model.family}, {"preset", cfg.model.preset}, {"parameters", params}}},
      {"data",
       {{"preset", cfg.data.preset},
        {"train_size", data.train.size()},
        {"val_size", data.val.size()},
        {"test_size", data.test.size()},
        {"train_fraction", cfg.data.train_fraction},
        {"train_per_class", cfg.data.train_per_class}}},
      {"epochs", last.epoch},
      {"steps", last.step},
      {"images_seen", result.images_seen},
      {"selection_metric", result.selection_metric},
      {"final", epoch_json(last)},
      {"best", epoch_json(best)},
      {"train_time_s", result.train_time_s},
      {"train_images_per_s", double(result.images_seen) / std::max(result.train_time_s, 1e-9)},
      {"wall_time_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()},
      {"threads", threads},
      {"device", device.str()},
      {"precision", cfg.train.precision},
  };
  atomic_write(dir / "summary.json", summary.dump(2) + "\n");
  spdlog::info("done: final test acc {:.2f}%, best {} {:.2f}% at epoch {} (test acc {:.2f}%), {:.0f}s", 100 * last.test_acc,
               result.selection_metric, 100 * result.final_position.best_metric, best.epoch, 100 * best.test_acc,
               summary["wall_time_s"].get<double>());
  return summary;
}

EvalReport evaluate_run(const fs::path& target, const std::vector<std::string>& overrides) {
  EvalReport report;
  fs::path checkpoint = target;
  if (fs::is_directory(target)) {
    checkpoint = target / "checkpoints" / "best.pt";
    if (!fs::exists(checkpoint))
      throw CheckpointError(target.string() + ": no checkpoints/best.pt (is this a biaslab run directory?)");
    if (fs::exists(target / "summary.json")) {
      try {
        report.recorded = json::parse(read_file(target / "summary.json")).at("best");
      } catch (const json::exception& e) {
        throw CheckpointError((target / "summary.json").string() + ": unreadable: " + e.what());
      }
    }
  }
  report.checkpoint = checkpoint.string();
  const CheckpointMeta meta = read_checkpoint_meta(checkpoint.string());
  LoadOptions lo;
  lo.resolve_presets = false;
  const Config cfg = load_config_text(meta.config_yaml, checkpoint.string() + " (stored config)", overrides, lo);

  const c10::Device device = select_device(cfg.runtime.device);
  set_threads(int(cfg.runtime.threads));
  ClassifierPtr model = build_model(cfg.model, input_spec(cfg.data));
  load_checkpoint(checkpoint.string(), *model, nullptr);
  model->to(device);
  Dataset data = load_dataset(cfg.data);
  Loader test(data.test, loader_options(cfg, cfg.train.eval_batch_size, false));
  report.test = evaluate(*model, test, device, cfg.train.precision);
  return report;
}

}  // namespace biaslab
