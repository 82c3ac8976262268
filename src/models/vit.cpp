#include "models/vit.h"

#include <torch/torch.h>

#include "layers/init.h"
#include "layers/norm.h"
#include "layers/pos_embed.h"
#include "layers/transformer_block.h"

namespace biaslab {
namespace nn = torch::nn;

ViTImpl::ViTImpl(const ViTOptions& options_) : options(options_) {
  TORCH_CHECK(options.pool() == "cls" || options.pool() == "gap", "ViT: unknown pool '", options.pool(), "'");
  const int64_t dim = options.embed_dim();
  patch_embed = register_module("patch_embed", PatchEmbed(PatchEmbedOptions(
      options.img_size(), options.patch_size(), options.in_chans(), dim)));
  const bool use_cls = options.pool() == "cls";
  const int64_t tokens = patch_embed->num_patches() + (use_cls ? 1 : 0);
  if (use_cls) cls_token = register_parameter("cls_token", torch::zeros({1, 1, dim}));
  const std::string& pe = options.pos_embed();
  TORCH_CHECK(pe == "learned" || pe == "sincos2d" || pe == "none" || pe == "relative", "ViT: unknown pos_embed '",
              pe, "'");
  if (pe == "learned") pos_embed = register_parameter("pos_embed", torch::zeros({1, tokens, dim}));
  if (pe == "sincos2d")
    pos_embed = register_buffer("pos_embed", sincos_2d_pos_embed(patch_embed->grid_size(), dim, use_cls));
  pos_drop = register_module("pos_drop", nn::Dropout(options.drop_rate()));
  blocks = register_module("blocks", nn::Sequential());
  for (int64_t i = 0; i < options.depth(); ++i) {
    const double dpr = options.depth() > 1 ? options.drop_path_rate() * double(i) / double(options.depth() - 1) : 0.0;
    blocks->push_back(TransformerBlock(TransformerBlockOptions(dim, options.num_heads())
                                           .drop_path(dpr)
                                           .attn_window(options.attn_window())
                                           .grid(patch_embed->grid_size())
                                           .prefix_tokens(use_cls ? 1 : 0)
                                           .relative_position(pe == "relative")
                                           .layer_scale_init(options.layer_scale_init())
                                           .mlp_ratio(options.mlp_ratio())
                                           .qkv_bias(options.qkv_bias())
                                           .drop(options.drop_rate())
                                           .attn_drop(options.attn_drop_rate())
                                           .norm(options.norm())
                                           .norm_placement(options.norm_placement())
                                           .residual(options.residual())));
  }
  norm = make_token_norm(options.norm(), dim);
  register_module("norm", norm.ptr());
  head = register_module("head", nn::Linear(dim, options.num_classes()));

  // timm's initialisation: truncated normal (0.02) for Linear weights and pos_embed,
  // zero biases, N(0, 1e-6) class token; the patch conv keeps LibTorch's default.
  torch::NoGradGuard no_grad;
  if (pe == "learned") trunc_normal_(pos_embed, 0.02);
  if (use_cls) cls_token.normal_(0.0, 1e-6);
  for (auto& m : modules(false)) {
    if (auto* lin = m->as<nn::Linear>()) {
      trunc_normal_(lin->weight, 0.02);
      if (lin->bias.defined()) lin->bias.zero_();
    }
  }
}

torch::Tensor ViTImpl::forward_features(const torch::Tensor& x) {
  auto t = patch_embed(x);  // (B, N, D)
  if (cls_token.defined()) t = torch::cat({cls_token.expand({t.size(0), -1, -1}), t}, 1);  // (B, N+1, D)
  t = pos_drop(pos_embed.defined() ? t + pos_embed : t);
  t = blocks->forward(t);
  return norm.forward(t);
}

torch::Tensor ViTImpl::forward(const torch::Tensor& x) {
  auto t = forward_features(x);
  auto pooled = cls_token.defined() ? t.select(1, 0) : t.mean(1);  // (B, D)
  return head(pooled);
}

}  // namespace biaslab
