#pragma once
// Optimizer factory: SGD (momentum, Nesterov) or AdamW, with weight decay only on
// weights that are not norm gains, biases, positional embeddings or class tokens.
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>

#include "config/config.h"

namespace biaslab {

/// True for parameters exempt from weight decay: 0/1-D tensors (biases, norm
/// weights) and anything named pos_embed, cls_token or relative_position_bias_table.
bool exempt_from_weight_decay(const std::string& name, const torch::Tensor& p);

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const torch::nn::Module& model,
                                                        const OptimConfig& cfg);

/// Sets the learning rate of every parameter group.
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace biaslab
