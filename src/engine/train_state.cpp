#include "engine/train_state.h"

#include <nlohmann/json.hpp>

namespace biaslab {
using nlohmann::json;

static void to_json(json& j, const EvalPair& p) { j = {{"loss", p.loss}, {"acc", p.acc}}; }
static void from_json(const json& j, EvalPair& p) {
  p.loss = j.at("loss").get<double>();
  p.acc = j.at("acc").get<double>();
}

static void to_json(json& j, const EpochRecord& r) {
  j = {{"epoch", r.epoch}, {"step", r.step}, {"lr", r.lr}, {"train_loss", r.train_loss}, {"train_acc", r.train_acc},
       {"has_val", r.has_val}, {"val", r.val}, {"test", r.test}, {"has_ema", r.has_ema}, {"ema_val", r.ema_val},
       {"ema_test", r.ema_test}, {"skipped_steps", r.skipped_steps}};
}
static void from_json(const json& j, EpochRecord& r) {
  r.epoch = j.at("epoch").get<int64_t>();
  r.step = j.at("step").get<int64_t>();
  r.lr = j.at("lr").get<double>();
  r.train_loss = j.at("train_loss").get<double>();
  r.train_acc = j.at("train_acc").get<double>();
  r.has_val = j.at("has_val").get<bool>();
  r.val = j.at("val").get<EvalPair>();
  r.test = j.at("test").get<EvalPair>();
  r.has_ema = j.at("has_ema").get<bool>();
  r.ema_val = j.at("ema_val").get<EvalPair>();
  r.ema_test = j.at("ema_test").get<EvalPair>();
  r.skipped_steps = j.at("skipped_steps").get<int64_t>();
}

std::string train_state_to_json(const TrainState& s) {
  json top_k = json::array();
  for (const auto& e : s.top_k) top_k.push_back({{"epoch", e.epoch}, {"metric", e.metric}});
  json j = {{"epoch", s.epoch},
            {"step", s.step},
            {"batch_in_epoch", s.batch_in_epoch},
            {"epoch_loss_sum", s.epoch_loss_sum},
            {"epoch_correct", s.epoch_correct},
            {"epoch_seen", s.epoch_seen},
            {"epoch_skipped", s.epoch_skipped},
            {"last_lr", s.last_lr},
            {"best_metric", s.best_metric},
            {"best_epoch", s.best_epoch},
            {"epochs_since_best", s.epochs_since_best},
            {"images_seen", s.images_seen},
            {"skipped_steps", s.skipped_steps},
            {"consecutive_skips", s.consecutive_skips},
            {"loss_scale", s.loss_scale},
            {"scaler_good_steps", s.scaler_good_steps},
            {"finished", s.finished},
            {"stopped_early", s.stopped_early},
            {"history", s.history},
            {"top_k", top_k}};
  return j.dump();
}

TrainState train_state_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    TrainState s;
    s.epoch = j.at("epoch").get<int64_t>();
    s.step = j.at("step").get<int64_t>();
    s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
    s.epoch_loss_sum = j.at("epoch_loss_sum").get<double>();
    s.epoch_correct = j.at("epoch_correct").get<int64_t>();
    s.epoch_seen = j.at("epoch_seen").get<int64_t>();
    s.epoch_skipped = j.at("epoch_skipped").get<int64_t>();
    s.last_lr = j.at("last_lr").get<double>();
    s.best_metric = j.at("best_metric").get<double>();
    s.best_epoch = j.at("best_epoch").get<int64_t>();
    s.epochs_since_best = j.at("epochs_since_best").get<int64_t>();
    s.images_seen = j.at("images_seen").get<int64_t>();
    s.skipped_steps = j.at("skipped_steps").get<int64_t>();
    s.consecutive_skips = j.at("consecutive_skips").get<int64_t>();
    s.loss_scale = j.at("loss_scale").get<double>();
    s.scaler_good_steps = j.at("scaler_good_steps").get<int64_t>();
    s.finished = j.at("finished").get<bool>();
    s.stopped_early = j.at("stopped_early").get<bool>();
    s.history = j.at("history").get<std::vector<EpochRecord>>();
    for (const auto& e : j.at("top_k")) s.top_k.push_back({e.at("epoch").get<int64_t>(), e.at("metric").get<double>()});
    return s;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed training state: ") + e.what());
  }
}

}  // namespace biaslab
