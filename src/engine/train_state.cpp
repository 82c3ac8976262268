#include "engine/train_state.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace biaslab {
using nlohmann::json;

namespace {
// JSON has no NaN or Inf (nlohmann writes them as null): store those as strings so a
// diverged evaluation loss cannot make a checkpoint unreadable.
json real(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}
double real(const json& j) {
  if (j.is_string()) {
    const auto& t = j.get_ref<const std::string&>();
    if (t == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (t == "inf") return std::numeric_limits<double>::infinity();
    if (t == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return j.get<double>();
}
}  // namespace

static void to_json(json& j, const EvalPair& p) {
  j = {{"loss", real(p.loss)}, {"acc", real(p.acc)}};
  if (p.has_top5()) j["top5"] = real(p.top5);
}
static void from_json(const json& j, EvalPair& p) {
  p.loss = real(j.at("loss"));
  p.acc = real(j.at("acc"));
  if (j.contains("top5")) p.top5 = real(j.at("top5"));  // absent: 5 classes or fewer, or an older checkpoint
}

static void to_json(json& j, const EpochRecord& r) {
  j = {{"epoch", r.epoch}, {"step", r.step}, {"lr", real(r.lr)}, {"train_loss", real(r.train_loss)},
       {"train_acc", real(r.train_acc)}, {"evaluated", r.evaluated},
       {"has_val", r.has_val}, {"has_test", r.has_test}, {"val", r.val}, {"test", r.test}, {"has_ema", r.has_ema}, {"ema_val", r.ema_val},
       {"ema_test", r.ema_test}, {"skipped_steps", r.skipped_steps}};
  if (r.has_train_eval)
    j.update({{"has_train_eval", true}, {"train_eval", r.train_eval}, {"ema_train_eval", r.ema_train_eval}});
}
static void from_json(const json& j, EpochRecord& r) {
  r.epoch = j.at("epoch").get<int64_t>();
  r.step = j.at("step").get<int64_t>();
  r.lr = real(j.at("lr"));
  r.train_loss = real(j.at("train_loss"));
  r.train_acc = real(j.at("train_acc"));
  r.evaluated = j.value("evaluated", true);  // checkpoints from before train.eval_every
  r.has_val = j.at("has_val").get<bool>();
  r.has_test = j.value("has_test", r.evaluated);  // checkpoints from before train.eval_test
  r.val = j.at("val").get<EvalPair>();
  r.test = j.at("test").get<EvalPair>();
  r.has_ema = j.at("has_ema").get<bool>();
  r.ema_val = j.at("ema_val").get<EvalPair>();
  r.ema_test = j.at("ema_test").get<EvalPair>();
  r.skipped_steps = j.at("skipped_steps").get<int64_t>();
  r.has_train_eval = j.value("has_train_eval", false);  // absent: off, or a checkpoint from before it
  if (r.has_train_eval) {
    r.train_eval = j.at("train_eval").get<EvalPair>();
    r.ema_train_eval = j.at("ema_train_eval").get<EvalPair>();
  }
}

std::string train_state_to_json(const TrainState& s) {
  json top_k = json::array();
  for (const auto& e : s.top_k) top_k.push_back({{"epoch", e.epoch}, {"metric", real(e.metric)}});
  json j = {{"epoch", s.epoch},
            {"step", s.step},
            {"batch_in_epoch", s.batch_in_epoch},
            {"epoch_loss_sum", real(s.epoch_loss_sum)},
            {"epoch_correct", s.epoch_correct},
            {"epoch_seen", s.epoch_seen},
            {"epoch_skipped", s.epoch_skipped},
            {"last_lr", real(s.last_lr)},
            {"best_metric", real(s.best_metric)},
            {"best_epoch", s.best_epoch},
            {"epochs_since_best", s.epochs_since_best},
            {"images_seen", s.images_seen},
            {"skipped_steps", s.skipped_steps},
            {"consecutive_skips", s.consecutive_skips},
            {"overflow_steps", s.overflow_steps},
            {"loss_scale", real(s.loss_scale)},
            {"scaler_good_steps", s.scaler_good_steps},
            {"finished", s.finished},
            {"stopped_early", s.stopped_early},
            {"history", s.history},
            {"top_k", top_k},
            {"window",
             {{"steps", s.window.steps}, {"seen", s.window.seen}, {"loss_sum", real(s.window.loss_sum)},
              {"correct", s.window.correct}, {"grad_norm_sum", real(s.window.grad_norm_sum)},
              {"applied", s.window.applied}, {"skipped", s.window.skipped}}}};
  return j.dump();
}

TrainState train_state_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    TrainState s;
    s.epoch = j.at("epoch").get<int64_t>();
    s.step = j.at("step").get<int64_t>();
    s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
    s.epoch_loss_sum = real(j.at("epoch_loss_sum"));
    s.epoch_correct = j.at("epoch_correct").get<int64_t>();
    s.epoch_seen = j.at("epoch_seen").get<int64_t>();
    s.epoch_skipped = j.at("epoch_skipped").get<int64_t>();
    s.last_lr = real(j.at("last_lr"));
    s.best_metric = real(j.at("best_metric"));
    s.best_epoch = j.at("best_epoch").get<int64_t>();
    s.epochs_since_best = j.at("epochs_since_best").get<int64_t>();
    s.images_seen = j.at("images_seen").get<int64_t>();
    s.skipped_steps = j.at("skipped_steps").get<int64_t>();
    s.consecutive_skips = j.at("consecutive_skips").get<int64_t>();
    s.overflow_steps = j.at("overflow_steps").get<int64_t>();
    s.loss_scale = real(j.at("loss_scale"));
    s.scaler_good_steps = j.at("scaler_good_steps").get<int64_t>();
    s.finished = j.at("finished").get<bool>();
    s.stopped_early = j.at("stopped_early").get<bool>();
    s.history = j.at("history").get<std::vector<EpochRecord>>();
    for (const auto& e : j.at("top_k")) s.top_k.push_back({e.at("epoch").get<int64_t>(), real(e.at("metric"))});
    if (j.contains("window")) {  // absent in checkpoints from before metrics_steps.csv
      const json& w = j.at("window");
      s.window = {w.at("steps").get<int64_t>(),    w.at("seen").get<int64_t>(),     real(w.at("loss_sum")),
                  w.at("correct").get<int64_t>(), real(w.at("grad_norm_sum")), w.at("applied").get<int64_t>(),
                  w.at("skipped").get<int64_t>()};
    }
    return s;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed training state: ") + e.what());
  }
}

}  // namespace biaslab
