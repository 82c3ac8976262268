#pragma once
// Vision Transformer (Dosovitskiy et al. 2021, arXiv:2010.11929), timm layout:
// patch_embed.proj, cls_token, pos_embed, blocks.N.{norm1,attn.qkv,attn.proj,norm2,mlp.fc1,mlp.fc2},
// norm, head. Pre-norm blocks, learned positional embedding, class-token or mean pooling.
// Ablations: the norm kind, pre/post placement, residual connections on/off, positional
// encodings, local windows, ConViT's gated positional attention, LayerScale / ReZero.
// Hybrids are this class with a CNN `backbone` in the patch embedding (ViT-hybrid,
// CCT's conv tokenizer): one transformer, pluggable embeddings.
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/container/any.h>

#include <string>

#include "export/scriptable.h"
#include "layers/patch_embed.h"
#include "models/classifier.h"

namespace biaslab {

struct ViTOptions {
  ViTOptions(int64_t img_size, int64_t patch_size, int64_t num_classes)
      : img_size_(img_size), patch_size_(patch_size), num_classes_(num_classes) {}
  TORCH_ARG(int64_t, img_size);
  /// Patch side on the image, or on the backbone's feature map.
  TORCH_ARG(int64_t, patch_size);
  TORCH_ARG(int64_t, num_classes);
  TORCH_ARG(int64_t, in_chans) = 3;
  /// Optional CNN between image and patch projection (registered as patch_embed.backbone),
  /// with the side and channels of the map it outputs for img_size x img_size images.
  TORCH_ARG(torch::nn::AnyModule, backbone);
  TORCH_ARG(int64_t, backbone_size) = 0;
  TORCH_ARG(int64_t, backbone_channels) = 0;
  TORCH_ARG(int64_t, embed_dim) = 192;
  TORCH_ARG(int64_t, depth) = 12;
  TORCH_ARG(int64_t, num_heads) = 3;
  TORCH_ARG(double, mlp_ratio) = 4.0;
  TORCH_ARG(bool, qkv_bias) = true;
  /// Dropout on embeddings, after attention projections and in MLPs.
  TORCH_ARG(double, drop_rate) = 0.0;
  TORCH_ARG(double, attn_drop_rate) = 0.0;
  /// "cls": classify the class token; "gap": mean of the patch tokens (no class token);
  /// "seq": CCT's sequence pooling, softmax(Linear(D, 1)(tokens))-weighted token mean.
  TORCH_ARG(std::string, pool) = "cls";
  /// Token norm in the blocks and before the head: layernorm | batchnorm | rmsnorm | none.
  TORCH_ARG(std::string, norm) = "layernorm";
  /// pre | post (see layers/transformer_block.h).
  TORCH_ARG(std::string, norm_placement) = "pre";
  /// Skip connections in every block.
  TORCH_ARG(bool, residual) = true;
  /// learned | sincos2d (fixed) | none | relative (per-head relative-position bias in
  /// every block's attention, no absolute embedding)
  TORCH_ARG(std::string, pos_embed) = "learned";
  /// Stochastic depth, ramped linearly from 0 (first block) to this (last block).
  TORCH_ARG(double, drop_path_rate) = 0.0;
  /// LayerScale initial gain (e.g. 1e-4); 0 = off.
  TORCH_ARG(double, layer_scale_init) = 0.0;
  /// Local attention: 0 = global; k (odd) = k x k patch neighbourhoods.
  TORCH_ARG(int64_t, attn_window) = 0;
  /// The first N blocks use ConViT's gated positional self-attention; with a class token
  /// it joins after them (d'Ascoli et al. 2021).
  TORCH_ARG(int64_t, gpsa_layers) = 0;
  TORCH_ARG(double, locality_strength) = 1.0;
  /// Attention scores divided by sqrt(head width) (true) or not, and by a softmax
  /// temperature (see AttentionOptions).
  TORCH_ARG(bool, attn_scale_by_sqrt_dk) = true;
  TORCH_ARG(double, attn_temperature) = 1.0;
  /// ReZero scalar residual gains from 0 (see TransformerBlockOptions).
  TORCH_ARG(bool, rezero) = false;
  /// The residual stream (the tokens between blocks) in bf16 when the forward pass runs
  /// under bf16 autocast: the embeddings are cast once, blocks add in bf16 and pass bf16
  /// on (LayerNorm statistics stay fp32); false keeps it in the parameters' dtype.
  TORCH_ARG(bool, residual_in_autocast) = false;
};

class ViTImpl : public Classifier, public Scriptable {
 public:
  explicit ViTImpl(const ViTOptions& options);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
  /// Tokens after the final norm: (B, N(+1), D).
  torch::Tensor forward_features(const torch::Tensor& x);
  /// Pooled features: (B, D).
  torch::Tensor pool(const torch::Tensor& tokens);
  /// [backbone stages], embed (patch projection, class token, positional embedding),
  /// blocks.0 .. blocks.N-1, head (final norm, pooling, classifier).
  std::vector<Stage> stages() override;

  ViTOptions options;
  PatchEmbed patch_embed{nullptr};
  torch::Tensor cls_token;  // (1, 1, D); undefined with gap pooling
  torch::Tensor pos_embed;  // (1, N(+1), D): parameter (learned), buffer (sincos2d), undefined (none)
  torch::nn::Dropout pos_drop{nullptr};
  torch::nn::Sequential blocks{nullptr};
  torch::nn::AnyModule norm;
  torch::nn::Linear attention_pool{nullptr};  // pool "seq" only
  torch::nn::Linear head{nullptr};

 private:
  /// Tokens from the image, or from the backbone's map when `map` is true.
  torch::Tensor embed(const torch::Tensor& x, bool map);
  /// Block i, with the class token joining first where GPSA blocks end.
  torch::Tensor run_block(size_t i, const torch::Tensor& t);
  torch::Tensor with_cls(const torch::Tensor& tokens);
  size_t cls_at() const { return static_cast<size_t>(options.gpsa_layers()); }
};

}  // namespace biaslab
