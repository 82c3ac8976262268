#pragma once
// The training loop. It receives a built model, optimizer, schedule and loaders; it
// does not read configs, name model types, or know whether it runs inside a sweep.
// What happens to metrics and checkpoints is up to the callbacks.
#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/loader.h"
#include "engine/schedule.h"
#include "models/classifier.h"

namespace biaslab {

struct EpochRecord {
  int64_t epoch = 0;  ///< 1-based
  int64_t step = 0;   ///< optimizer steps completed
  double lr = 0.0;    ///< at the last step of the epoch
  double train_loss = 0.0, train_acc = 0.0;
  bool has_val = false;
  double val_loss = 0.0, val_acc = 0.0;
  double test_loss = 0.0, test_acc = 0.0;
  double epoch_time_s = 0.0;   ///< training part of the epoch
  double eval_time_s = 0.0;
  double images_per_s = 0.0;   ///< training throughput
};

/// Where training stands; handed to the checkpoint callback.
struct TrainPosition {
  int64_t epoch = 0;  ///< epochs completed
  int64_t step = 0;
  double best_metric = -1.0;
  int64_t best_epoch = -1;
};

struct TrainResult {
  std::vector<EpochRecord> history;
  std::string selection_metric;  ///< val_acc, or test_acc when there is no validation split
  TrainPosition final_position;
  double train_time_s = 0.0;     ///< sum of the training parts of all epochs
  int64_t images_seen = 0;
};

struct TrainerCallbacks {
  std::function<void(const EpochRecord&)> on_epoch;
  /// `name` is "last" or "best".
  std::function<void(const std::string& name, const TrainPosition&)> save_checkpoint;
};

class Trainer {
 public:
  Trainer(Classifier& model, torch::optim::Optimizer& optimizer, const LrSchedule& schedule, Loader& train,
          Loader* val, Loader& test, const TrainConfig& cfg, c10::Device device, TrainerCallbacks callbacks);
  TrainResult fit();

 private:
  void train_epoch(int64_t epoch, int64_t epochs, EpochRecord& record, TrainResult& result);

  Classifier& model_;
  torch::optim::Optimizer& optimizer_;
  const LrSchedule& schedule_;
  Loader& train_;
  Loader* val_;
  Loader& test_;
  TrainConfig cfg_;
  c10::Device device_;
  TrainerCallbacks callbacks_;
  TrainPosition pos_;
  int64_t total_steps_ = 0;
};

/// Total optimizer steps a config asks for (train.steps, else epochs x batches).
int64_t planned_steps(const TrainConfig& cfg, int64_t batches_per_epoch);

}  // namespace biaslab
