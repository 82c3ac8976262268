#pragma once
// Multi-head self-attention with one fused qkv projection (Vaswani et al. 2017,
// arXiv:1706.03762; layout as timm's `Attention`).
//   a_ij = softmax_j(q_i . k_j / sqrt(d_k)),   z_i = sum_j a_ij v_j
// Without positional information it is permutation-equivariant: Attn(PX) = P Attn(X).
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace biaslab {

struct AttentionOptions {
  AttentionOptions(int64_t dim, int64_t num_heads) : dim_(dim), num_heads_(num_heads) {}
  /// Token width; must be divisible by num_heads.
  TORCH_ARG(int64_t, dim);
  /// Number of heads, each of width dim / num_heads.
  TORCH_ARG(int64_t, num_heads);
  /// Bias in the qkv projection.
  TORCH_ARG(bool, qkv_bias) = true;
  /// Dropout on the attention weights.
  TORCH_ARG(double, attn_drop) = 0.0;
  /// Dropout after the output projection.
  TORCH_ARG(double, proj_drop) = 0.0;
};

class AttentionImpl : public torch::nn::Cloneable<AttentionImpl> {
 public:
  explicit AttentionImpl(const AttentionOptions& options);
  void reset() override;
  /// x: (B, N, C) -> (B, N, C)
  torch::Tensor forward(const torch::Tensor& x);
  /// The attention weights (B, heads, N, N) of the last forward call, kept only
  /// when keep_attention(true) was set (analysis); undefined otherwise.
  torch::Tensor last_attention() const { return last_attn_; }
  void keep_attention(bool keep) { keep_attn_ = keep; }

  AttentionOptions options;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::nn::Dropout attn_drop{nullptr}, proj_drop{nullptr};

 private:
  bool keep_attn_ = false;
  torch::Tensor last_attn_;
};
TORCH_MODULE(Attention);

}  // namespace biaslab
