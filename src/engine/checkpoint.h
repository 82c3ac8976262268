#pragma once
// Checkpoints: model parameters and buffers, optimizer state, training position and
// the resolved config, in one torch archive written atomically.
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <string>

namespace biaslab {

struct CheckpointMeta {
  int64_t epoch = 0;          ///< epochs completed
  int64_t step = 0;           ///< optimizer steps completed
  double best_metric = -1.0;  ///< best selection metric so far
  int64_t best_epoch = -1;
  std::string config_yaml;    ///< the resolved config
  std::string biaslab_version;
  std::string torch_version;
};

/// Writes model (+ optimizer when given) and meta to `path` atomically.
void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer* optimizer, const CheckpointMeta& meta);

/// Reads only the meta (to recover the config before a model exists).
CheckpointMeta read_checkpoint_meta(const std::string& path);

/// Loads into `model` (every parameter and buffer must be present with the same
/// shape) and into `optimizer` when given. Throws CheckpointError naming the file.
CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer* optimizer);

}  // namespace biaslab
