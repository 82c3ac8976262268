#pragma once
// Multi-head self-attention with one fused qkv projection (Vaswani et al. 2017,
// arXiv:1706.03762; layout as timm's `Attention`).
//   a_ij = softmax_j(q_i . k_j / sqrt(d_k)),   z_i = sum_j a_ij v_j
// Without positional information it is permutation-equivariant: Attn(PX) = P Attn(X).
#include <cmath>

#include <torch/nn/cloneable.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "export/scriptable.h"

namespace biaslab {

struct AttentionOptions {
  AttentionOptions(int64_t dim, int64_t num_heads) : dim_(dim), num_heads_(num_heads) {}
  /// The factor the scores q . k are multiplied by: (1 / sqrt(head_dim) or 1) / temperature.
  double score_scale(int64_t head_dim) const {
    return (scale_by_sqrt_dk_ ? 1.0 / std::sqrt(double(head_dim)) : 1.0) / temperature_;
  }
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
  /// Local attention: 0 = global; k (odd) = each patch attends only to patches in the
  /// k x k neighbourhood around it on the patch grid (prefix tokens such as the class
  /// token attend and are attended globally). Needs `grid`.
  TORCH_ARG(int64_t, window) = 0;
  /// Side of the square patch grid (for `window`).
  TORCH_ARG(int64_t, grid) = 0;
  /// Tokens before the patch tokens (1 with a class token).
  TORCH_ARG(int64_t, prefix_tokens) = 0;
  /// Learned relative-position bias per head between patch tokens (Swin, Liu et al.
  /// 2021; Cordonnier et al. 2020): a table of (2 grid - 1)^2 x heads entries indexed
  /// by the (row, column) offset, added to the attention logits. Needs `grid`.
  TORCH_ARG(bool, relative_position) = false;
  /// Gated positional self-attention (ConViT, d'Ascoli et al. 2021, arXiv:2103.10697):
  ///   A = (1 - sigmoid(g_h)) softmax(q k^T / sqrt(d)) + sigmoid(g_h) softmax(v_h . r_ij)
  /// with r_ij = (dx, dy, dx^2 + dy^2) the key's offset from the query on the patch
  /// grid. Initialised convolution-like: head h attends around its own offset of a
  /// sqrt(H) x sqrt(H) kernel, v starts as the identity, gates at g = 1 (mostly
  /// positional); training can make each head content-based. Needs `grid`, no prefix tokens.
  TORCH_ARG(bool, gated_positional) = false;
  /// GPSA: sharpness alpha of the initial positional attention, exp(-alpha |r - offset_h|^2).
  TORCH_ARG(double, locality_strength) = 1.0;
  /// Divide the scores q . k by sqrt(head width) (Vaswani et al. 2017): with unit-variance
  /// q and k their variance is the head width, and the scaling brings it to ~1, keeping
  /// the softmax away from one-hot, where its Jacobian vanishes. false: unscaled q . k.
  TORCH_ARG(bool, scale_by_sqrt_dk) = true;
  /// Softmax temperature tau > 0: the scores are divided by it. tau -> 0 moves attention
  /// towards argmax retrieval, tau -> infinity towards the uniform mean of the values.
  TORCH_ARG(double, temperature) = 1.0;
  /// Use a fused attention kernel where the weights are not needed (keep_attention off,
  /// no GPSA) and runtime.kernels is not `reference`: with `fused`, on the CPU biaslab's
  /// own (layers/attention_kernel.h; not with attention dropout while training);
  /// otherwise LibTorch's scaled_dot_product_attention where it has one (2.0+). The
  /// result is the manual path's up to rounding (tested).
  TORCH_ARG(bool, fused) = true;
};

/// Boolean (N, N) mask, true where attention is allowed, for a `window` x `window`
/// neighbourhood on a grid x grid patch grid after `prefix` global tokens.
torch::Tensor local_attention_mask(int64_t grid, int64_t window, int64_t prefix);

class AttentionImpl : public torch::nn::Cloneable<AttentionImpl>, public Scriptable {
 public:
  explicit AttentionImpl(const AttentionOptions& options);
  void reset() override;
  /// x: (B, N, C) -> (B, N, C)
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
  /// The attention weights (B, heads, N, N) of the last forward call, kept only
  /// when keep_attention(true) was set (analysis); undefined otherwise.
  torch::Tensor last_attention() const { return last_attn_; }
  void keep_attention(bool keep) { keep_attn_ = keep; }
  /// The relative-position bias (heads, N, N) for N tokens, zero for pairs involving
  /// prefix tokens (relative_position only).
  torch::Tensor relative_bias(int64_t n, const c10::Device& device);
  /// GPSA: the positional attention (heads, N, N), rows summing to 1.
  torch::Tensor positional_attention(const c10::Device& device);
  /// GPSA: the convolution-like initialisation (pos_proj, v = identity, gates); the ViT
  /// calls it again after its own Linear initialisation.
  void init_locality();
  /// Precomputed index tensors (undefined when the option is off), for export:
  /// the (N, N) bool local-window mask, the (P*P) relative-bias table rows, the
  /// (P, P, 3) GPSA offsets.
  const torch::Tensor& window_mask() const { return mask_; }
  const torch::Tensor& relative_index() const { return rel_index_; }
  const torch::Tensor& relative_offsets() const { return rel_pos_; }

  AttentionOptions options;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  torch::Tensor relative_position_bias_table;  // ((2G-1)^2, heads); undefined unless relative_position
  torch::nn::Dropout attn_drop{nullptr}, proj_drop{nullptr};
  torch::nn::Linear pos_proj{nullptr};  // GPSA: r_ij (3) -> one logit per head
  torch::Tensor gating_param;           // GPSA: (heads) gate logits

 private:
  bool keep_attn_ = false;
  torch::Tensor last_attn_;
  torch::Tensor mask_;  // (N, N) bool for local attention, moved to the input's device on use
  torch::Tensor rel_index_;  // (P*P) long: table row of each patch pair, likewise
  torch::Tensor rel_pos_;    // (P, P, 3) float: GPSA offsets (dx, dy, dx^2 + dy^2), likewise
};
TORCH_MODULE(Attention);

}  // namespace biaslab
