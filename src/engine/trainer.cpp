#include "engine/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <csignal>
#include <cmath>

#include "core/errors.h"
#include "core/fault.h"
#include "core/logging.h"
#include "core/runtime.h"
#include "engine/evaluate.h"
#include "engine/optimizer.h"
#include "engine/precision.h"
#include "engine/progress.h"
#include "engine/step.h"
#include "engine/step_sync.h"

namespace biaslab {
using Clock = std::chrono::steady_clock;

namespace {
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "data 1%, fwd/bwd 88%, update 10%" of the training loop's time.
std::string phase_shares(const EpochTiming& t) {
  const double total = std::max(t.train_s, 1e-9);
  return fmt::format("data {:.0f}%, fwd/bwd {:.0f}%, update {:.0f}%", 100 * t.data_s / total,
                     100 * t.compute_s / total, 100 * t.optim_s / total);
}
}  // namespace

int64_t planned_steps(const TrainConfig& cfg, int64_t batches_per_epoch) {
  return cfg.steps > 0 ? cfg.steps : cfg.epochs * batches_per_epoch;
}

Trainer::Trainer(Classifier& model, torch::optim::Optimizer& optimizer, const LrSchedule& schedule, Loader& train,
                 Loader* val, Loader& test, const TrainConfig& cfg, c10::Device device, TrainerCallbacks callbacks,
                 Ema* ema, dist::Communicator* comm)
    : model_(model), optimizer_(optimizer), schedule_(schedule), train_(train), val_(val), test_(test), cfg_(cfg),
      device_(device), callbacks_(std::move(callbacks)), ema_(ema),
      sync_(comm ? data_parallel_step_sync(*comm, train) : local_step_sync()), params_(model.parameters()),
      buffers_(model.buffers()) {
  total_steps_ = planned_steps(cfg_, train_.batches_per_epoch());
  if (cfg_.precision == "fp16") scaler_.emplace();
}

void Trainer::set_rank_seed(uint64_t seed) { sync_->set_seed(seed); }

std::string Trainer::selection_metric() const { return (val_ && val_->size() > 0) ? "val_acc" : "test_acc"; }

void Trainer::save(const std::string& name, const TrainState& state) {
  if (callbacks_.save_checkpoint) callbacks_.save_checkpoint(name, state);
}

void Trainer::fit(TrainState& state) {
  const int64_t bpe = train_.batches_per_epoch();
  const int64_t epochs = (total_steps_ + bpe - 1) / bpe;
  if (scaler_ && state.loss_scale > 0) scaler_->restore(state.loss_scale, state.scaler_good_steps);
  if (state.step == 0) {
    spdlog::info("training for {} epoch(s), {} step(s) of batch {} ({} images per epoch); best checkpoint chosen by {}",
                 epochs, total_steps_, cfg_.batch_size, train_.size(), selection_metric());
  } else if (!state.finished) {
    spdlog::info("resuming at step {}/{} (epoch {}, batch {})", state.step, total_steps_, state.epoch + 1,
                 state.batch_in_epoch);
  }
  window_start_ = Clock::now();
  window_images_ = 0;
  while (!state.finished && state.epoch < epochs) {
    train_epoch(state);
    // A signal during the epoch-end evaluation.
    if (const int sig = sync_->stop_after_evaluation(); sig != 0 && !state.finished && state.epoch < epochs)
      throw Interrupted("stopped by signal " + std::to_string(sig) + " during the evaluation after epoch " +
                        std::to_string(state.epoch) + " (step " + std::to_string(state.step) +
                        "); checkpoint written, rerun the same command to resume");
  }
}

void Trainer::train_epoch(TrainState& state) {
  model_.train();
  train_.set_epoch(state.epoch);
  const int64_t bpe = train_.batches_per_epoch();
  const int64_t batches = std::min(bpe, total_steps_ - state.epoch * bpe);
  const int64_t epochs = (total_steps_ + bpe - 1) / bpe;
  Progress progress(stderr_is_terminal() && sync_->leads(), cfg_.log_every);
  progress.start_epoch(state.epoch, epochs, batches);
  const auto start = Clock::now();
  phase_ = EpochTiming{};
  const int64_t seen_at_start = state.epoch_seen;
  for (int64_t i = state.batch_in_epoch; i < batches; ++i) {
    train_step(state, i);
    state.batch_in_epoch = i + 1;
    if (state.step % cfg_.log_every == 0 || state.step == total_steps_) log_step(state);
    fault::kill_if("kill_after_step", state.step);
    if (fault::at("sigterm_after_step", state.step)) std::raise(SIGTERM);
    if (progress.wants_update(i) && state.epoch_seen > 0) {
      progress.update(i, state.epoch_loss_sum / double(state.epoch_seen),
                      double(state.epoch_correct) / double(state.epoch_seen),
                      double(state.epoch_seen - seen_at_start) / std::max(seconds_since(start), 1e-9));
    }
    const bool last_batch = i + 1 == batches;
    const bool periodic = !last_batch && cfg_.checkpoint_every > 0 && state.step % cfg_.checkpoint_every == 0;
    if (periodic) save("last", state);
    if (const int sig = sync_->stop_after_step(); sig != 0) {
      progress.finish_epoch();
      if (!periodic) save("last", state);  // once: a second save would overwrite last.prev.pt with a copy
      sync_->before_stopping(state.step);
      throw Interrupted("stopped by signal " + std::to_string(sig) + " at step " + std::to_string(state.step) +
                        "; checkpoint written, rerun the same command to resume");
    }
  }
  progress.finish_epoch();
  const double train_s = seconds_since(start);
  EpochTiming timing = phase_;
  timing.epoch = state.epoch + 1;
  timing.train_s = train_s;
  timing.images_per_s = double(state.epoch_seen - seen_at_start) / std::max(train_s, 1e-9);
  const auto end_start = Clock::now();
  end_epoch(state, timing);
  window_start_ += Clock::now() - end_start;  // the per-step images/s counts training time only
}

void Trainer::train_step(TrainState& state, int64_t batch_index) {
  const double lr = schedule_.at(state.step);
  set_learning_rate(optimizer_, lr);
  state.last_lr = lr;
  auto t = Clock::now();
  Batch b = train_.batch(batch_index);
  auto x = to_device(b.images, device_), y = to_device(b.labels, device_);
  auto targets = b.targets.defined() ? to_device(b.targets, device_) : torch::Tensor();
  phase_.data_s += seconds_since(t);
  t = Clock::now();
  // Under the skip policy a skipped step must leave no trace, including the running
  // statistics the forward pass updates (BatchNorm): keep a copy to restore.
  std::vector<torch::Tensor> buffers_before;
  if (cfg_.nonfinite == "skip")
    for (const auto& buf : buffers_) buffers_before.push_back(buf.clone());
  StepOptions step_options{cfg_.precision, cfg_.label_smoothing, fault::at("nan_loss_at_step", state.step + 1), {}};
  sync_->begin_step(state.step, batch_index, y.size(0), step_options);
  const StepStats local =
      forward_backward(model_, params_, x, y, targets, device_, step_options, scaler_ ? &*scaler_ : nullptr);
  const SyncedStats stats = sync_->end_step(state.step, local, y.size(0));
  const double loss_v = stats.loss, norm_v = stats.grad_norm;
  const int64_t correct = stats.correct, n = stats.n;
  phase_.compute_s += seconds_since(t);
  t = Clock::now();
  ++state.step;

  if (!std::isfinite(loss_v) || !std::isfinite(norm_v)) {
    // fp16 gradient overflow is the loss scaler's business until the scale bottoms out.
    if (scaler_ && std::isfinite(loss_v) && scaler_->scale() > 1.0) {
      scaler_->update(true);
      state.loss_scale = scaler_->scale();
      state.scaler_good_steps = scaler_->good_steps();
      ++state.overflow_steps;
      ++state.window.steps;
      ++state.window.skipped;
      return;
    }
    const std::string what = fmt::format("non-finite {} at step {} (epoch {}, batch {}): loss {}, gradient norm {}",
                                         std::isfinite(loss_v) ? "gradient" : "loss", state.step, state.epoch + 1,
                                         batch_index + 1, loss_v, norm_v);
    if (cfg_.nonfinite == "abort")
      throw NonFiniteError(what + "; stopping (train.nonfinite: abort), no checkpoint was written after it");
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < buffers_before.size(); ++k) buffers_[k].copy_(buffers_before[k]);
    ++state.skipped_steps;
    ++state.epoch_skipped;
    ++state.window.steps;
    ++state.window.skipped;
    if (++state.consecutive_skips >= cfg_.max_consecutive_skips)
      throw NonFiniteError(what + "; " + std::to_string(state.consecutive_skips) +
                           " non-finite steps in a row (train.max_consecutive_skips), stopping");
    spdlog::warn("{}; update skipped (train.nonfinite: skip, {} so far)", what, state.skipped_steps);
    return;
  }
  state.consecutive_skips = 0;
  clip_gradients(params_, norm_v, cfg_.grad_clip);
  optimizer_.step();
  if (scaler_) {
    scaler_->update(false);
    state.loss_scale = scaler_->scale();
    state.scaler_good_steps = scaler_->good_steps();
  }
  if (ema_) ema_->update();
  phase_.optim_s += seconds_since(t);
  state.epoch_loss_sum += loss_v * double(n);
  state.epoch_correct += correct;
  state.epoch_seen += n;
  state.images_seen += n;
  StepWindow& w = state.window;
  ++w.steps;
  ++w.applied;
  w.seen += n;
  w.loss_sum += loss_v * double(n);
  w.correct += correct;
  w.grad_norm_sum += norm_v;
  window_images_ += n;
}

void Trainer::log_step(TrainState& state) {
  StepWindow& w = state.window;
  StepLog row;
  row.step = state.step;
  row.epoch = state.epoch + 1;
  row.lr = state.last_lr;
  if (w.seen > 0) {
    row.loss = w.loss_sum / double(w.seen);
    row.acc = double(w.correct) / double(w.seen);
  }
  if (w.applied > 0) row.grad_norm = w.grad_norm_sum / double(w.applied);
  row.images_per_s = double(window_images_) / std::max(seconds_since(window_start_), 1e-9);
  row.skipped_steps = w.skipped;
  row.steps = w.steps;
  if (callbacks_.on_step_log) callbacks_.on_step_log(row);
  w = StepWindow{};
  window_start_ = Clock::now();
  window_images_ = 0;
}

void Trainer::end_epoch(TrainState& state, EpochTiming timing) {
  EpochRecord rec;
  rec.epoch = state.epoch + 1;
  rec.step = state.step;
  rec.lr = state.last_lr;
  rec.skipped_steps = state.epoch_skipped;
  if (state.epoch_seen > 0) {
    rec.train_loss = state.epoch_loss_sum / double(state.epoch_seen);
    rec.train_acc = double(state.epoch_correct) / double(state.epoch_seen);
  }
  const auto eval_start = Clock::now();
  std::vector<torch::Tensor> running = buffers_;  // the model's and the EMA copy's
  if (ema_)
    for (const auto& b : ema_->shadow().buffers()) running.push_back(b);
  sync_->before_evaluation(running, rec.epoch);
  auto run_eval = [&](Classifier& m, Loader& l) {
    EvalMetrics e = evaluate(m, l, device_, cfg_.precision, sync_->communicator());
    return EvalPair{e.loss, e.accuracy, e.top5};
  };
  // train.eval_every skips evaluation on intermediate epochs; the last epoch is always
  // evaluated, so final metrics exist and best/early stopping see evaluated epochs only.
  rec.evaluated = rec.epoch % cfg_.eval_every == 0 || state.step >= total_steps_;
  rec.has_val = rec.evaluated && val_ && val_->size() > 0;
  if (rec.has_val) rec.val = run_eval(model_, *val_);
  // train.eval_test: final evaluates the test set only at the run's last evaluation: the
  // last epoch, or this one if its validation accuracy triggers early stopping.
  // Early stopping: `patience` evaluations without a better validation accuracy, and not
  // before train.early_stop_min_steps (a task whose learning starts late is not stopped
  // while it sits at chance).
  auto stop_due = [&](int64_t evaluations_since_best) {
    return cfg_.early_stop_patience > 0 && evaluations_since_best >= cfg_.early_stop_patience &&
           state.step >= cfg_.early_stop_min_steps;
  };
  const bool stops_here = rec.has_val && !(rec.val.acc > state.best_metric) && stop_due(state.epochs_since_best + 1);
  rec.has_test = rec.evaluated && (cfg_.eval_test != "final" || !rec.has_val || state.step >= total_steps_ || stops_here);
  if (rec.has_test) rec.test = run_eval(model_, test_);
  rec.has_train_eval = rec.evaluated && train_eval_ && train_eval_->size() > 0;
  if (rec.has_train_eval) rec.train_eval = run_eval(model_, *train_eval_);
  if (ema_ && rec.evaluated) {
    auto& shadow = static_cast<Classifier&>(ema_->shadow());
    rec.has_ema = true;
    if (rec.has_val) rec.ema_val = run_eval(shadow, *val_);
    if (rec.has_test) rec.ema_test = run_eval(shadow, test_);
    if (rec.has_train_eval) rec.ema_train_eval = run_eval(shadow, *train_eval_);
  }
  timing.eval_s = seconds_since(eval_start);

  const double metric = rec.has_val ? rec.val.acc : rec.test.acc;
  const bool improved = rec.evaluated && metric > state.best_metric;
  if (improved) {
    state.best_metric = metric;
    state.best_epoch = rec.epoch;
    state.epochs_since_best = 0;
  } else if (rec.evaluated) {
    ++state.epochs_since_best;
  }
  state.epoch = rec.epoch;
  state.batch_in_epoch = 0;
  state.epoch_loss_sum = 0.0;
  state.epoch_correct = state.epoch_seen = state.epoch_skipped = 0;
  state.history.push_back(rec);
  state.stopped_early = stop_due(state.epochs_since_best);
  state.finished = state.step >= total_steps_ || state.stopped_early;

  // The training sample evaluated like the test set: what the model fits, beside the
  // running mean over augmented batches.
  const std::string clean = rec.has_train_eval ? fmt::format(" (clean {:.4f} / {:.2f}%)", rec.train_eval.loss,
                                                             100 * rec.train_eval.acc)
                                               : "";
  if (rec.evaluated && !rec.has_test)
    spdlog::info("epoch {}: train loss {:.4f} acc {:.2f}%{} | val loss {:.4f} acc {:.2f}% (test at the end) | {:.1f}s "
                 "train + {:.1f}s eval",
                 rec.epoch, rec.train_loss, 100 * rec.train_acc, clean, rec.val.loss, 100 * rec.val.acc,
                 timing.train_s, timing.eval_s);
  else if (!rec.evaluated)
    spdlog::info("epoch {}: train loss {:.4f} acc {:.2f}% | {:.1f}s train (evaluated every {} epochs)", rec.epoch,
                 rec.train_loss, 100 * rec.train_acc, timing.train_s, cfg_.eval_every);
  else
    spdlog::info("epoch {}: train loss {:.4f} acc {:.2f}%{} | {}test loss {:.4f} acc {:.2f}%{}{}{} | {:.1f}s train ({}) + "
                 "{:.1f}s eval",
                 rec.epoch, rec.train_loss, 100 * rec.train_acc, clean,
                 rec.has_val ? fmt::format("val loss {:.4f} acc {:.2f}% | ", rec.val.loss, 100 * rec.val.acc) : "",
                 rec.test.loss, 100 * rec.test.acc,
                 rec.test.has_top5() ? fmt::format(" top-5 {:.2f}%", 100 * rec.test.top5) : "",
                 rec.has_ema ? fmt::format(" | EMA test acc {:.2f}%", 100 * rec.ema_test.acc) : "",
                 rec.skipped_steps ? fmt::format(" | {} update(s) skipped", rec.skipped_steps) : "", timing.train_s,
                 phase_shares(timing), timing.eval_s);
  if (state.stopped_early)
    spdlog::info("early stopping: no better {} for {} epoch(s)", selection_metric(), state.epochs_since_best);

  // Top-k epoch checkpoints, best first; ties keep the earlier epoch.
  bool keep_epoch_checkpoint = false;
  if (cfg_.save_top_k > 0 && rec.evaluated) {
    auto& top = state.top_k;
    auto pos = std::find_if(top.begin(), top.end(), [&](const TopKEntry& e) { return metric > e.metric; });
    const auto index = pos - top.begin();
    top.insert(pos, TopKEntry{rec.epoch, metric});
    keep_epoch_checkpoint = index < cfg_.save_top_k;
    while (int64_t(top.size()) > cfg_.save_top_k) {
      const bool written = top.back().epoch != rec.epoch;  // this epoch's entry never got a file
      if (written && callbacks_.remove_checkpoint)
        callbacks_.remove_checkpoint(fmt::format("epoch-{:04d}", top.back().epoch));
      top.pop_back();
    }
  }
  const auto save_start = Clock::now();
  if (callbacks_.on_epoch_end) callbacks_.on_epoch_end(state);
  if (keep_epoch_checkpoint) save(fmt::format("epoch-{:04d}", rec.epoch), state);
  if (improved) save("best", state);
  save("last", state);
  timing.save_s = seconds_since(save_start);
  if (callbacks_.on_timing) callbacks_.on_timing(timing);
}

}  // namespace biaslab
