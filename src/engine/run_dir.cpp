#include "engine/run_dir.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <tuple>

#include "core/errors.h"
#include "core/fs.h"
#include "core/input_file.h"
#include "core/output_folder.h"

namespace biaslab::run_dir {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
const std::vector<std::string> kRunFiles = {"config.yaml", "meta.json",   "metrics.csv", "metrics_steps.csv",
                                            "summary.json", "timing.csv", "timing.json", "train.log"};
// Where a run can resume from, most recent first.
const std::vector<std::string> kResumeCandidates = {"last.pt", "last.prev.pt", "best.pt"};

std::string csv_header(bool ema, bool top5, bool train_eval) {
  return std::string("epoch,step,lr,train_loss,train_acc,") + (train_eval ? "train_eval_loss,train_eval_acc," : "") +
         "val_loss,val_acc,test_loss,test_acc," + (top5 ? "val_top5_acc,test_top5_acc," : "") +
         (ema ? "ema_val_loss,ema_val_acc,ema_test_loss,ema_test_acc," : "") +
         (ema && top5 ? "ema_val_top5_acc,ema_test_top5_acc," : "") +
         (ema && train_eval ? "ema_train_eval_loss,ema_train_eval_acc," : "") + "skipped_steps\n";
}

// Train-eval columns when the run evaluated its training sample (train.train_eval_size > 0).
bool has_train_eval(const TrainState& s) {
  for (const auto& r : s.history)
    if (r.has_train_eval) return true;
  return false;
}

// Top-5 columns when the run measured top-5 (more than 5 classes).
bool has_top5(const TrainState& s) {
  for (const auto& r : s.history)
    if (r.has_test && r.test.has_top5()) return true;
  return false;
}

std::string num(double v) { return fmt::format("{:.8g}", v); }

json epoch_json(const EpochRecord& r) {
  json j = {{"epoch", r.epoch}, {"step", r.step}, {"train_loss", r.train_loss}, {"train_acc", r.train_acc}};
  if (r.has_test) j.update({{"test_loss", r.test.loss}, {"test_acc", r.test.acc}});
  if (r.has_val) j.update({{"val_loss", r.val.loss}, {"val_acc", r.val.acc}});
  if (r.has_ema) {
    if (r.has_test) j.update({{"ema_test_loss", r.ema_test.loss}, {"ema_test_acc", r.ema_test.acc}});
    if (r.has_val) j.update({{"ema_val_loss", r.ema_val.loss}, {"ema_val_acc", r.ema_val.acc}});
  }
  auto top5 = [&](const char* key, bool present, const EvalPair& p) {
    if (present && p.has_top5()) j[key] = p.top5;
  };
  top5("test_top5_acc", r.has_test, r.test);
  top5("val_top5_acc", r.has_val, r.val);
  top5("ema_test_top5_acc", r.has_ema && r.has_test, r.ema_test);
  top5("ema_val_top5_acc", r.has_ema && r.has_val, r.ema_val);
  if (r.has_train_eval) {
    j.update({{"train_eval_loss", r.train_eval.loss}, {"train_eval_acc", r.train_eval.acc}});
    if (r.has_ema) j.update({{"ema_train_eval_loss", r.ema_train_eval.loss}, {"ema_train_eval_acc", r.ema_train_eval.acc}});
  }
  return j;
}

}  // namespace

bool holds_run(const fs::path& dir) {
  for (const auto& f : kRunFiles)
    if (fs::exists(dir / f)) return true;
  return fs::exists(dir / "checkpoints");
}

bool is_run_dir(const fs::path& dir) {
  // meta.json is the first file a run writes (the lock aside) and names biaslab's version.
  try {
    const fs::path meta = dir / "meta.json";
    if (input_file_problem(meta).empty() && fs::file_size(meta) < kMaxConfigFileBytes &&
        json::parse(read_file(meta)).contains("biaslab_version"))
      return true;
  } catch (const std::exception&) {
  }
  for (const auto& name : kResumeCandidates)
    if (is_checkpoint_file((dir / "checkpoints" / name).string())) return true;
  return false;
}

bool is_export_name(const std::string& name) {
  for (const char* stem : {"best", "last", "ema"})
    for (const char* ext : {".pt", ".state_dict.pt"})
      if (name == std::string(stem) + ext) return true;
  return false;
}

void claim(const fs::path& dir) { claim_output_folder(dir, "run directory", "a biaslab run directory", is_run_dir); }

namespace {

// Names a run writes into checkpoints/ and export/.
bool is_checkpoint_name(const std::string& name) {
  if (name == "last.pt" || name == "last.prev.pt" || name == "best.pt") return true;
  if (name.size() < 13 || name.rfind("epoch-", 0) != 0 || name.compare(name.size() - 3, 3, ".pt") != 0) return false;
  return name.substr(6, name.size() - 9).find_first_not_of("0123456789") == std::string::npos;
}

// Removes the files of `dir` that `ours` names and biaslab's temporaries, then the folder
// if nothing else is left in it.
template <typename Ours>
void remove_ours(const fs::path& dir, Ours&& ours) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> doomed;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && (ours(name) || is_temporary_name(name))) doomed.push_back(e.path());
  }
  for (const auto& p : doomed) fs::remove(p);
  if (fs::is_empty(dir, ec)) fs::remove(dir, ec);
}

}  // namespace

void wipe(const fs::path& dir) {
  // meta.json stays: it marks the folder as biaslab's until the new run replaces it.
  for (const auto& f : kRunFiles)
    if (f != "meta.json") fs::remove(dir / f);
  fs::remove(dir / "skipped_images.txt");
  remove_ours(dir / "checkpoints", is_checkpoint_name);
  remove_ours(dir / "export", is_export_name);  // archives of the model being discarded
  remove_ours(dir / "tensorboard", [](const std::string& name) {  // its curves
    return name.rfind("events.out.tfevents.", 0) == 0;
  });
}

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

void remove_stale_temporaries(const fs::path& dir) {
  for (const fs::path& d : {dir, dir / "checkpoints", dir / "export"}) biaslab::remove_stale_temporaries(d);
}

std::string metrics_csv(const TrainState& s, bool ema) {
  const bool top5 = has_top5(s), train_eval = has_train_eval(s);
  std::string out = csv_header(ema, top5, train_eval);
  auto top5_cell = [](bool present, const EvalPair& p) { return present && p.has_top5() ? num(p.top5) : ""; };
  for (const auto& r : s.history) {
    out += fmt::format("{},{},{},{},{},", r.epoch, r.step, num(r.lr), num(r.train_loss), num(r.train_acc));
    if (train_eval)
      out += fmt::format("{},{},", r.has_train_eval ? num(r.train_eval.loss) : "",
                         r.has_train_eval ? num(r.train_eval.acc) : "");
    out += fmt::format("{},{},{},{},", r.has_val ? num(r.val.loss) : "", r.has_val ? num(r.val.acc) : "", r.has_test ? num(r.test.loss) : "",
                       r.has_test ? num(r.test.acc) : "");
    if (top5) out += top5_cell(r.has_val, r.val) + "," + top5_cell(r.has_test, r.test) + ",";
    if (ema)
      out += fmt::format("{},{},{},{},", r.has_val ? num(r.ema_val.loss) : "", r.has_val ? num(r.ema_val.acc) : "",
                         r.has_ema && r.has_test ? num(r.ema_test.loss) : "",
                         r.has_ema && r.has_test ? num(r.ema_test.acc) : "");
    if (ema && top5) out += top5_cell(r.has_val, r.ema_val) + "," + top5_cell(r.has_ema && r.has_test, r.ema_test) + ",";
    if (ema && train_eval)
      out += fmt::format("{},{},", r.has_ema && r.has_train_eval ? num(r.ema_train_eval.loss) : "",
                         r.has_ema && r.has_train_eval ? num(r.ema_train_eval.acc) : "");
    out += fmt::format("{}\n", r.skipped_steps);
  }
  return out;
}

// summary.json: deterministic (a function of the config and the training state only).
json summary(const Config& cfg, const TrainState& s, const std::string& selection, int64_t params,
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
            {"subset_seed", cfg.data.subset_seed},
            {"subset_fingerprint", data.subset_fingerprint},
            {"mean", data.mean},
            {"std", data.std},
            {"skipped_images", data.skipped.size()}}},
          {"epochs", s.epoch},
          {"steps", s.step},
          {"images_seen", s.images_seen},
          {"skipped_steps", s.skipped_steps},
          {"fp16_overflow_steps", s.overflow_steps},
          {"stopped_early", s.stopped_early},
          {"selection_metric", selection},
          {"final", epoch_json(last)},
          {"best", epoch_json(best)},
          {"precision", cfg.train.precision},
          {"threads", threads},
          {"device", device.str()},
          {"seed", cfg.runtime.seed}};
}

namespace {
constexpr const char* kTimingHeader = "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s";
constexpr const char* kTimingHeaderV1 = "epoch,train_s,eval_s,images_per_s";  // before the phase split
}  // namespace

// timing.csv keeps one row per completed epoch, whichever process ran it. Rows written
// before the phase split (epoch,train_s,eval_s,images_per_s) are carried over with zero
// phases, so their time counts as "progress_and_other" and the totals stay right.
std::string kept_timing_rows(const fs::path& file, int64_t up_to_epoch) {
  std::string out = std::string(kTimingHeader) + "\n";
  std::ifstream in(file);
  std::string header, line;
  if (!std::getline(in, header) || (header != kTimingHeader && header != kTimingHeaderV1)) return out;
  while (std::getline(in, line)) {
    try {
      if (std::stoll(line.substr(0, line.find(','))) > up_to_epoch) continue;
      if (header == kTimingHeaderV1) {
        std::istringstream row(line);
        std::string epoch, train, eval, rate;
        std::getline(row, epoch, ',');
        std::getline(row, train, ',');
        std::getline(row, eval, ',');
        std::getline(row, rate, ',');
        line = epoch + "," + train + ",0,0,0," + eval + ",0," + rate;
      }
      out += line + "\n";
    } catch (const std::exception&) {
    }
  }
  return out;
}

namespace {
// Measured seconds and rates keep the resolution they were measured to: sums of
// millisecond cells are computed in whole milliseconds (0.052, not 0.052000000000000005).
// round_to(v, 1000) is v to 3 decimals, correctly rounded, so it prints as such.
double round_to(double v, double per_unit) { return std::round(v * per_unit) / per_unit; }
double ms(int64_t millis) { return double(millis) / 1e3; }
}  // namespace

json timing_summary(const std::string& timing_csv, double wall_s, int64_t images_seen) {
  // Column sums in milliseconds: train, data, compute, optim, eval, save.
  int64_t sum[6] = {0, 0, 0, 0, 0, 0};
  std::istringstream in(timing_csv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string cell;
    std::getline(row, cell, ',');  // epoch
    for (int64_t& s : sum) {
      std::getline(row, cell, ',');
      s += std::llround(1e3 * std::stod(cell));
    }
  }
  const auto [train_ms, data_ms, compute_ms, optim_ms, eval_ms, save_ms] =
      std::tuple(sum[0], sum[1], sum[2], sum[3], sum[4], sum[5]);
  const int64_t other_ms = std::max<int64_t>(0, train_ms - data_ms - compute_ms - optim_ms);
  const int64_t epochs_ms = train_ms + eval_ms + save_ms;
  auto share = [&](int64_t s) { return epochs_ms > 0 ? round_to(double(s) / double(epochs_ms), 1e4) : 0.0; };
  return {{"train_time_s", ms(train_ms)},
          {"eval_time_s", ms(eval_ms)},
          {"train_images_per_s", train_ms > 0 ? round_to(1e3 * double(images_seen) / double(train_ms), 10) : 0.0},
          {"last_process_wall_time_s", round_to(wall_s, 1e3)},
          {"breakdown_s",
           {{"data", ms(data_ms)}, {"forward_backward", ms(compute_ms)}, {"optimizer", ms(optim_ms)},
            {"evaluation", ms(eval_ms)}, {"checkpoints_and_metrics", ms(save_ms)},
            {"progress_and_other", ms(other_ms)}}},
          // Waiting for data, writing files and the progress display, as a share of the
          // epochs' wall time (training + evaluation + epoch-end writes).
          {"non_compute_share", share(data_ms + save_ms + other_ms)}};
}

std::string timing_row(const EpochTiming& t) {
  return fmt::format("{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.1f}\n", t.epoch, t.train_s, t.data_s,
                     t.compute_s, t.optim_s, t.eval_s, t.save_s, t.images_per_s);
}

namespace {
constexpr const char* kStepHeader = "step,epoch,lr,train_loss,train_acc,grad_norm,images_per_s,skipped_steps";
constexpr size_t kStepColumns = 8;
}  // namespace

std::string kept_step_rows(const fs::path& file, int64_t up_to_step) {
  std::string out = std::string(kStepHeader) + "\n";
  std::ifstream in(file);
  std::string header, line;
  if (!std::getline(in, header) || header != kStepHeader) return out;
  while (std::getline(in, line)) {
    // A row cut short by a crash (no newline, too few cells) is dropped with what follows.
    if (in.eof() || size_t(std::count(line.begin(), line.end(), ',')) != kStepColumns - 1) break;
    try {
      if (std::stoll(line.substr(0, line.find(','))) > up_to_step) break;
    } catch (const std::exception&) {
      break;
    }
    out += line + "\n";
  }
  return out;
}

std::string step_row(const StepLog& r) {
  auto cell = [](double v) { return std::isnan(v) ? std::string() : num(v); };
  return fmt::format("{},{},{},{},{},{},{:.1f},{}\n", r.step, r.epoch, num(r.lr), cell(r.loss), cell(r.acc),
                     cell(r.grad_norm), r.images_per_s, r.skipped_steps);
}

}  // namespace biaslab::run_dir
