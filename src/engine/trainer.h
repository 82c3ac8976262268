#pragma once
// The training loop. It receives a built model, optimizer, schedule and loaders; it
// does not read configs, name model types, or know whether it runs inside a sweep.
// Where it stands lives in a TrainState, so it can start from any checkpoint; what
// happens to metrics and checkpoints is up to the callbacks.
#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "data/loader.h"
#include "engine/ema.h"
#include "engine/loss_scaler.h"
#include "engine/schedule.h"
#include "engine/step_log.h"
#include "engine/step_sync.h"
#include "engine/train_state.h"
#include "models/classifier.h"

namespace biaslab {
namespace dist {
class Communicator;
}

/// Where an epoch's wall time went, in this process (partial for a resumed epoch).
/// train_s covers the whole training loop: data_s (the next batch, to the device),
/// compute_s (forward, loss, backward, the step's host sync), optim_s (clipping, the
/// update, EMA) and the rest (progress display, periodic checkpoints). On CUDA the
/// phases are only as exact as the host syncs make them (kernels run asynchronously).
struct EpochTiming {
  int64_t epoch = 0;
  double train_s = 0.0;
  double data_s = 0.0;
  double compute_s = 0.0;
  double optim_s = 0.0;
  double eval_s = 0.0;   ///< evaluation after the epoch
  double save_s = 0.0;   ///< metrics.csv and the epoch-end checkpoints
  double images_per_s = 0.0;
};

struct TrainerCallbacks {
  /// Every train.log_every optimizer steps (global step count) and at the last step.
  std::function<void(const StepLog&)> on_step_log;
  /// After an epoch's record was appended to state.history.
  std::function<void(const TrainState&)> on_epoch_end;
  /// Write checkpoint `name` ("last", "best", "epoch-0007") for `state`.
  std::function<void(const std::string& name, const TrainState&)> save_checkpoint;
  /// Delete checkpoint `name` (a top-k checkpoint that dropped out).
  std::function<void(const std::string& name)> remove_checkpoint;
  std::function<void(const EpochTiming&)> on_timing;
};

class Trainer {
 public:
  Trainer(Classifier& model, torch::optim::Optimizer& optimizer, const LrSchedule& schedule, Loader& train,
          Loader* val, Loader& test, const TrainConfig& cfg, c10::Device device, TrainerCallbacks callbacks,
          Ema* ema = nullptr, dist::Communicator* comm = nullptr);

  /// With `comm` (data-parallel training) every rank runs fit() on its shard of each
  /// global batch: gradients, step statistics, stop signals and evaluation are combined
  /// across ranks, so every rank takes the same decisions and holds the same weights;
  /// only the callbacks of rank 0 should write anything.
  /// Trains from `state` (fresh or restored) until all steps are done, early stopping
  /// triggers, or a stop signal arrives (then throws Interrupted after saving "last").
  /// A non-finite loss or gradient throws NonFiniteError under the abort policy.
  void fit(TrainState& state);

  /// Distributed runs: the seed each step's dropout / drop-path draws derive from
  /// (runtime.seed; the global generator is reseeded from (seed, step, rank) every step).
  void set_rank_seed(uint64_t seed);

  /// train.train_eval_size: a sample of the training split, evaluated (with the EMA model
  /// too) at every evaluation; nullptr = none.
  void set_train_eval(Loader* loader) { train_eval_ = loader; }

  /// "val_acc" when there is a validation split, else "test_acc".
  std::string selection_metric() const;
  int64_t total_steps() const { return total_steps_; }

 private:
  void train_epoch(TrainState& state);
  void train_step(TrainState& state, int64_t batch_index);
  void log_step(TrainState& state);
  void end_epoch(TrainState& state, EpochTiming timing);
  void save(const std::string& name, const TrainState& state);

  Classifier& model_;
  torch::optim::Optimizer& optimizer_;
  const LrSchedule& schedule_;
  Loader& train_;
  Loader* val_;
  Loader& test_;
  Loader* train_eval_ = nullptr;
  TrainConfig cfg_;
  c10::Device device_;
  TrainerCallbacks callbacks_;
  Ema* ema_;
  std::unique_ptr<StepSync> sync_;  // what the ranks agree on each step (nothing in one process)
  std::optional<LossScaler> scaler_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> buffers_;
  int64_t total_steps_ = 0;
  EpochTiming phase_;  // the current epoch's phase times so far
  std::chrono::steady_clock::time_point window_start_;  // of the per-step log's images/s
  int64_t window_images_ = 0;                           // images trained since window_start_
};

/// Total optimizer steps a config asks for (train.steps, else epochs x batches).
int64_t planned_steps(const TrainConfig& cfg, int64_t batches_per_epoch);

}  // namespace biaslab
