#include "engine/trainer.h"

#include <torch/torch.h>

#include <chrono>

#include "core/logging.h"
#include "engine/evaluate.h"
#include "engine/optimizer.h"
#include "engine/precision.h"
#include "engine/progress.h"

namespace biaslab {
namespace F = torch::nn::functional;
using Clock = std::chrono::steady_clock;

int64_t planned_steps(const TrainConfig& cfg, int64_t batches_per_epoch) {
  return cfg.steps > 0 ? cfg.steps : cfg.epochs * batches_per_epoch;
}

Trainer::Trainer(Classifier& model, torch::optim::Optimizer& optimizer, const LrSchedule& schedule, Loader& train,
                 Loader* val, Loader& test, const TrainConfig& cfg, c10::Device device, TrainerCallbacks callbacks)
    : model_(model), optimizer_(optimizer), schedule_(schedule), train_(train), val_(val), test_(test), cfg_(cfg),
      device_(device), callbacks_(std::move(callbacks)) {
  total_steps_ = planned_steps(cfg_, train_.batches_per_epoch());
}

void Trainer::train_epoch(int64_t epoch, int64_t epochs, EpochRecord& record, TrainResult& result) {
  model_.train();
  train_.set_epoch(epoch);
  const int64_t batches = std::min(train_.batches_per_epoch(), total_steps_ - pos_.step);
  Progress progress(stderr_is_terminal(), cfg_.log_every);
  progress.start_epoch(epoch, epochs, batches);
  // Running sums stay on the device; the host reads them only when progress reports.
  auto opts = torch::TensorOptions().device(device_);
  auto loss_sum = torch::zeros({}, opts.dtype(torch::kDouble));
  auto correct = torch::zeros({}, opts.dtype(torch::kLong));
  int64_t seen = 0;
  const auto start = Clock::now();
  for (int64_t i = 0; i < batches; ++i) {
    const double lr = schedule_.at(pos_.step);
    set_learning_rate(optimizer_, lr);
    Batch b = train_.batch(i);
    auto x = b.images.to(device_), y = b.labels.to(device_);
    torch::Tensor logits;
    {
      AutocastScope autocast(cfg_.precision, device_);
      logits = model_.forward(x);
    }
    logits = logits.to(torch::kFloat);
    auto loss = F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().label_smoothing(cfg_.label_smoothing));
    optimizer_.zero_grad();
    loss.backward();
    if (cfg_.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model_.parameters(), cfg_.grad_clip);
    optimizer_.step();
    ++pos_.step;

    const int64_t n = y.size(0);
    seen += n;
    loss_sum += loss.detach().to(torch::kDouble) * double(n);
    correct += (logits.detach().argmax(1) == y).sum();
    record.lr = lr;
    if (progress.wants_update(i)) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      progress.update(i, loss_sum.item<double>() / double(seen), double(correct.item<int64_t>()) / double(seen),
                      double(seen) / std::max(elapsed, 1e-9));
    }
    if (cfg_.checkpoint_every > 0 && pos_.step % cfg_.checkpoint_every == 0 && callbacks_.save_checkpoint) {
      callbacks_.save_checkpoint("last", pos_);
    }
  }
  progress.finish_epoch();
  record.epoch_time_s = std::chrono::duration<double>(Clock::now() - start).count();
  record.train_loss = seen ? loss_sum.item<double>() / double(seen) : 0.0;
  record.train_acc = seen ? double(correct.item<int64_t>()) / double(seen) : 0.0;
  record.images_per_s = double(seen) / std::max(record.epoch_time_s, 1e-9);
  result.images_seen += seen;
  result.train_time_s += record.epoch_time_s;
}

TrainResult Trainer::fit() {
  TrainResult result;
  result.selection_metric = (val_ && val_->size() > 0) ? "val_acc" : "test_acc";
  const int64_t bpe = train_.batches_per_epoch();
  const int64_t epochs = (total_steps_ + bpe - 1) / bpe;
  spdlog::info("training for {} epoch(s), {} step(s) of batch {} ({} images per epoch); best checkpoint chosen by {}",
               epochs, total_steps_, cfg_.batch_size, train_.size(), result.selection_metric);

  for (int64_t epoch = 0; epoch < epochs && pos_.step < total_steps_; ++epoch) {
    EpochRecord rec;
    train_epoch(epoch, epochs, rec, result);
    rec.epoch = epoch + 1;
    rec.step = pos_.step;

    const auto eval_start = Clock::now();
    if (val_ && val_->size() > 0) {
      EvalMetrics v = evaluate(model_, *val_, device_, cfg_.precision);
      rec.has_val = true;
      rec.val_loss = v.loss;
      rec.val_acc = v.accuracy;
    }
    EvalMetrics t = evaluate(model_, test_, device_, cfg_.precision);
    rec.test_loss = t.loss;
    rec.test_acc = t.accuracy;
    rec.eval_time_s = std::chrono::duration<double>(Clock::now() - eval_start).count();

    spdlog::info("epoch {}/{}: train loss {:.4f} acc {:.2f}% | {}test loss {:.4f} acc {:.2f}% | {:.0f} img/s, "
                 "{:.1f}s train + {:.1f}s eval",
                 rec.epoch, epochs, rec.train_loss, 100 * rec.train_acc,
                 rec.has_val ? fmt::format("val loss {:.4f} acc {:.2f}% | ", rec.val_loss, 100 * rec.val_acc) : "",
                 rec.test_loss, 100 * rec.test_acc, rec.images_per_s, rec.epoch_time_s, rec.eval_time_s);

    pos_.epoch = rec.epoch;
    const double metric = rec.has_val ? rec.val_acc : rec.test_acc;
    const bool improved = metric > pos_.best_metric;
    if (improved) {
      pos_.best_metric = metric;
      pos_.best_epoch = rec.epoch;
    }
    result.history.push_back(rec);
    if (callbacks_.on_epoch) callbacks_.on_epoch(rec);
    if (callbacks_.save_checkpoint) {
      if (improved) callbacks_.save_checkpoint("best", pos_);
      callbacks_.save_checkpoint("last", pos_);
    }
  }
  result.final_position = pos_;
  return result;
}

}  // namespace biaslab
