#pragma once
// The files a training run writes into its directory (rank 0 alone): meta.json,
// config.yaml, train.log, skipped_images.txt, metrics.csv, metrics_steps.csv, timing.csv,
// the checkpoints, tensorboard/ (train.tensorboard), and at the end summary.json and
// timing.json.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/config.h"
#include "core/event_writer.h"
#include "data/dataset.h"
#include "engine/learner.h"
#include "engine/run_context.h"
#include "engine/run_dir.h"
#include "engine/train_state.h"
#include "engine/trainer.h"

namespace biaslab {

/// How this process runs the run, as meta.json and summary.json record it.
nlohmann::json distributed_json(const RunContext& ctx);

class RunRecorder {
 public:
  /// `config` is the resolved config the run computes with; `config_yaml` the config as
  /// given (config.yaml, and the identity stored in every checkpoint).
  RunRecorder(std::filesystem::path dir, const Config& config, std::string config_yaml, const RunContext& ctx,
              Learner& learner);
  ~RunRecorder();  ///< closes train.log
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  /// meta.json first (a resumed run appends to its "resumed" list), checkpoints/,
  /// train.log, config.yaml and the log lines of the run, its data and its model.
  void start(const std::string& given_precision, const std::string& command_line,
             const run_dir::ResumePoint* resume, const TrainState& state, const Dataset& data);

  /// metrics.csv, metrics_steps.csv and timing.csv for `state` (the state training
  /// continues from), and the callbacks that keep them, and the checkpoints, up to date.
  TrainerCallbacks callbacks(const TrainState& state);

  /// summary.json and timing.json of the finished run; returns summary.json's content.
  nlohmann::json finish(const TrainState& state, const std::string& selection_metric, const Dataset& data,
                        double wall_s);

 private:
  std::filesystem::path dir_;
  const Config& cfg_;
  std::string config_yaml_;
  const RunContext& ctx_;
  Learner& learner_;
  std::string timing_csv_;
  std::ofstream steps_csv_;  // metrics_steps.csv, appended to every train.log_every steps
  std::unique_ptr<EventWriter> events_;  // tensorboard/ (train.tensorboard)
  bool logging_ = false;
};

}  // namespace biaslab
