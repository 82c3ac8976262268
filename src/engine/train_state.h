#pragma once
// Everything about where a run stands that must survive a crash: the position in
// the data, running sums of the current epoch, the per-epoch history, best and top-k
// bookkeeping. Stored as JSON inside every checkpoint (doubles round-trip exactly),
// so a resumed run rebuilds metrics.csv and summary.json bit for bit.
// Wall-clock timings are deliberately not part of it (see timing.csv).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace biaslab {

struct EvalPair {
  double loss = 0.0;
  double acc = 0.0;
  /// Top-5 accuracy; NaN when not measured (5 classes or fewer, or a checkpoint from
  /// before top-5 was recorded).
  double top5 = std::numeric_limits<double>::quiet_NaN();
  bool has_top5() const { return !std::isnan(top5); }
};

struct EpochRecord {
  int64_t epoch = 0;  ///< 1-based
  int64_t step = 0;   ///< optimizer steps completed at the end of the epoch
  double lr = 0.0;    ///< learning rate of the epoch's last step
  double train_loss = 0.0, train_acc = 0.0;
  bool evaluated = true;  ///< false for epochs skipped by train.eval_every (val/test unset)
  bool has_val = false;
  bool has_test = true;   ///< false for evaluations without the test set (train.eval_test: final)
  EvalPair val, test;
  bool has_ema = false;
  EvalPair ema_val, ema_test;
  /// train.train_eval_size: the training sample evaluated like the test set (eval mode, no
  /// augmentation), unlike train_loss/train_acc, running means over the augmented batches.
  bool has_train_eval = false;
  EvalPair train_eval, ema_train_eval;
  int64_t skipped_steps = 0;  ///< updates skipped for non-finite values in this epoch
};

/// Sums over the steps since the last per-step log row (train.log_every), kept in the
/// state so that a resumed run writes the same rows as an uninterrupted one.
struct StepWindow {
  int64_t steps = 0;      ///< optimizer steps (skipped updates included)
  int64_t seen = 0;       ///< images in applied updates
  double loss_sum = 0.0;  ///< per-sample losses of applied updates
  int64_t correct = 0;
  double grad_norm_sum = 0.0;  ///< over applied updates
  int64_t applied = 0;
  int64_t skipped = 0;
};

struct TopKEntry {
  int64_t epoch = 0;
  double metric = 0.0;
};

struct TrainState {
  int64_t epoch = 0;           ///< epochs completed
  int64_t step = 0;            ///< optimizer steps taken (skipped updates included)
  int64_t batch_in_epoch = 0;  ///< batches of the current epoch already consumed
  double epoch_loss_sum = 0.0; ///< sum of per-sample losses of the current epoch
  int64_t epoch_correct = 0;
  int64_t epoch_seen = 0;
  int64_t epoch_skipped = 0;
  double last_lr = 0.0;
  double best_metric = -1.0;   ///< best selection metric so far
  int64_t best_epoch = -1;
  int64_t epochs_since_best = 0;
  int64_t images_seen = 0;     ///< images in applied updates
  int64_t skipped_steps = 0;
  int64_t consecutive_skips = 0;
  int64_t overflow_steps = 0;  ///< fp16 steps skipped by the loss scaler (gradient overflow)
  double loss_scale = 0.0;     ///< fp16 dynamic loss scale (0 = not used)
  int64_t scaler_good_steps = 0;
  bool finished = false;       ///< all steps done or stopped early
  bool stopped_early = false;
  std::vector<EpochRecord> history;
  std::vector<TopKEntry> top_k;  ///< sorted, best first
  StepWindow window;             ///< since the last per-step log row
};

std::string train_state_to_json(const TrainState& state);
/// Throws std::runtime_error on malformed input.
TrainState train_state_from_json(const std::string& json);

}  // namespace biaslab
