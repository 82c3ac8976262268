#pragma once
// Transformer block (timm's `Block`), with the ablation knobs of this project:
//   pre-norm  (default): x = x + Attn(N1(x));  x = x + MLP(N2(x))
//   post-norm (Vaswani et al. 2017): x = N1(x + Attn(x));  x = N2(x + MLP(x))
// residual=false drops the "x +" terms; the norm kind comes from layers/norm.h.
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>

#include "export/scriptable.h"
#include "layers/attention.h"
#include "layers/drop_path.h"
#include "layers/mlp.h"
#include "layers/norm.h"

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
  /// layernorm | batchnorm | rmsnorm | none (layers/norm.h)
  TORCH_ARG(std::string, norm) = "layernorm";
  /// pre | post
  TORCH_ARG(std::string, norm_placement) = "pre";
  /// Skip connections around attention and MLP.
  TORCH_ARG(bool, residual) = true;
  /// Stochastic depth: probability of dropping each residual branch per sample.
  TORCH_ARG(double, drop_path) = 0.0;
  /// LayerScale initial gain on each branch; 0 = no LayerScale.
  TORCH_ARG(double, layer_scale_init) = 0.0;
  /// Local attention window (see AttentionOptions); 0 = global.
  TORCH_ARG(int64_t, attn_window) = 0;
  TORCH_ARG(int64_t, grid) = 0;
  TORCH_ARG(int64_t, prefix_tokens) = 0;
  /// Relative-position bias in attention (see AttentionOptions).
  TORCH_ARG(bool, relative_position) = false;
  /// ConViT gated positional self-attention (see AttentionOptions).
  TORCH_ARG(bool, gated_positional) = false;
  TORCH_ARG(double, locality_strength) = 1.0;
  /// Score scaling and softmax temperature (see AttentionOptions).
  TORCH_ARG(bool, attn_scale_by_sqrt_dk) = true;
  TORCH_ARG(double, attn_temperature) = 1.0;
  /// ReZero (Bachlechner et al. 2020, arXiv:2003.04887): one scalar gain per branch,
  /// starting at 0 so the block starts as the identity (stored as ls1/ls2 of width 1).
  TORCH_ARG(bool, rezero) = false;
};

class TransformerBlockImpl : public torch::nn::Cloneable<TransformerBlockImpl>, public Scriptable {
 public:
  explicit TransformerBlockImpl(const TransformerBlockOptions& options);
  void reset() override;
  /// x: (B, N, C) -> (B, N, C)
  torch::Tensor forward(const torch::Tensor& x);
  /// For pre-norm residual blocks in a row (chains() of both): `n1` is norm1(x) when the
  /// block before computed it (else undefined: computed here), and with `next_norm` (the
  /// next block's norm1) the block returns {its output y, next_norm(y)} from one pass of
  /// the fused add + LayerNorm where it applies (two operators otherwise: the same
  /// values as forward() then the next block's norm1; in a bf16 residual stream the
  /// kernel normalises the sum before rounding y, so within bf16's resolution of them).
  /// Without, {forward(x), undefined}.
  std::pair<torch::Tensor, torch::Tensor> forward_chained(const torch::Tensor& x, const torch::Tensor& n1,
                                                          torch::nn::AnyModule* next_norm);
  /// Whether forward_chained can take and pass on the normalised input (pre-norm, residual).
  bool chains() const { return options.norm_placement() == "pre" && options.residual(); }
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;

  TransformerBlockOptions options;
  torch::nn::AnyModule norm1, norm2;
  Attention attn{nullptr};
  Mlp mlp{nullptr};
  LayerScale ls1{nullptr}, ls2{nullptr};  // null without LayerScale or ReZero
  DropPath drop_path{nullptr};
};
TORCH_MODULE(TransformerBlock);

}  // namespace biaslab
