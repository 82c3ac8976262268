#pragma once
// Pre-norm transformer block: x + Attn(LN(x)), then x + MLP(LN(x)) (timm's `Block`).
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "layers/attention.h"
#include "layers/mlp.h"

namespace biaslab {

struct TransformerBlockOptions {
  TransformerBlockOptions(int64_t dim, int64_t num_heads) : dim_(dim), num_heads_(num_heads) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(int64_t, num_heads);
  /// MLP hidden width = dim * mlp_ratio.
  TORCH_ARG(double, mlp_ratio) = 4.0;
  TORCH_ARG(bool, qkv_bias) = true;
  /// Dropout after the attention projection and inside the MLP.
  TORCH_ARG(double, drop) = 0.0;
  TORCH_ARG(double, attn_drop) = 0.0;
};

class TransformerBlockImpl : public torch::nn::Cloneable<TransformerBlockImpl> {
 public:
  explicit TransformerBlockImpl(const TransformerBlockOptions& options);
  void reset() override;
  /// x: (B, N, C) -> (B, N, C)
  torch::Tensor forward(const torch::Tensor& x);

  TransformerBlockOptions options;
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(TransformerBlock);

}  // namespace biaslab
