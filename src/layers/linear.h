#pragma once
// y = x W^T + b through aten::linear, whose fused path (one addmm on the flattened input)
// LibTorch 1.13's torch::nn::Linear::forward bypasses for inputs of more than two
// dimensions: it runs matmul and then adds the bias in a second pass over the output (and
// a third, the bias gradient's reduction, in backward). For the ViT's (B, N, C) tokens that
// cost ~15% of a bf16 training step (docs/performance.md).
#include <torch/nn/modules/linear.h>

namespace biaslab {

inline torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return torch::linear(x, layer->weight, layer->bias);
}

}  // namespace biaslab
