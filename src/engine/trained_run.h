#pragma once
// A trained run read back: its stored config, its checkpoints, the model they hold and
// the metrics recorded for them; and the re-evaluation `biaslab eval` reports. Used by
// eval, export and analyze.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/evaluate.h"
#include "models/classifier.h"

namespace biaslab {

/// The resolved config stored in a run directory (config.yaml) plus `overrides`.
Config load_run_config(const std::filesystem::path& run_dir, const std::vector<std::string>& overrides);

/// The checkpoint a target names: a run directory's checkpoints/NAME.pt (NAME best or
/// last), or a checkpoint file as is. CheckpointError when it does not exist.
std::filesystem::path resolve_checkpoint(const std::filesystem::path& target, const std::string& name);

struct TrainedModel {
  Config cfg;              ///< the stored config plus the overrides
  ClassifierPtr model;     ///< on the CPU, in training mode as built
  int64_t epoch = 0;       ///< epochs completed when the checkpoint was written
  int64_t step = 0;        ///< optimizer steps likewise
  std::string biaslab_version;  ///< of the binary that wrote it
};

/// Builds the model a checkpoint's stored config describes and loads its weights (the EMA
/// weights with `ema`; ConfigError when it was trained without EMA).
TrainedModel load_trained_model(const std::filesystem::path& checkpoint, bool ema,
                                const std::vector<std::string>& overrides);

/// The model `config` describes (a config file, presets resolved and `overrides` applied
/// as `train` reads it) with the weights of `weights`, a state dict or TorchScript file in
/// any form read_state_dict accepts (torchvision names included). Every parameter and
/// buffer must be in the file with its shape: CheckpointError naming the file and the keys
/// otherwise. Nothing is trained or run: BatchNorm statistics stay the file's.
TrainedModel load_weights_model(const std::filesystem::path& weights, const std::filesystem::path& config,
                                const std::vector<std::string>& overrides);

/// summary.json of the run a checkpoint belongs to (RUN_DIR/checkpoints/NAME.pt); null
/// when the checkpoint is not in a run directory or the run has none yet.
nlohmann::json read_run_summary(const std::filesystem::path& checkpoint);

/// The test metrics {"loss", "acc"[, "top5_acc"]} (EMA weights' with `ema`) summary.json recorded for
/// this checkpoint -- best.pt: the "best" entry, last.pt: "final" -- when that entry is
/// the state written after `epoch`; null otherwise.
nlohmann::json recorded_test_metrics(const std::filesystem::path& checkpoint, int64_t epoch, bool ema);

struct EvalRequest {
  std::filesystem::path target;        ///< run directory or checkpoint file (empty with `weights`)
  std::filesystem::path weights;       ///< foreign weights (load_weights_model) instead of a run
  std::filesystem::path config;        ///< the config file that describes `weights`' model and data
  std::string checkpoint = "best";     ///< best | last (run directories only)
  bool ema = false;                    ///< evaluate the EMA weights
  std::vector<std::string> overrides;  ///< --set on the stored config
};

struct EvalReport {
  std::string checkpoint;   ///< the checkpoint evaluated
  int64_t epoch = 0;        ///< epochs completed when it was written
  int64_t step = 0;         ///< optimizer steps completed when it was written
  EvalMetrics test;
  std::string weights_fingerprint;  ///< of the weights evaluated (checkpoint.h)
  nlohmann::json recorded;  ///< {"loss", "acc"} summary.json recorded for it, or null
};

EvalReport evaluate_run(const EvalRequest& req);

}  // namespace biaslab
