#include "models/vit.h"

#include <torch/torch.h>

#include <tuple>

#include "core/torch_compat.h"
#include "layers/conv_tokenizer.h"
#include "layers/init.h"
#include "layers/norm.h"
#include "layers/pos_embed.h"
#include "layers/transformer_block.h"
#include "models/resnet.h"

namespace biaslab {
namespace nn = torch::nn;

ViTImpl::ViTImpl(const ViTOptions& options_) : options(options_) {
  const std::string& pool_kind = options.pool();
  TORCH_CHECK(pool_kind == "cls" || pool_kind == "gap" || pool_kind == "seq", "ViT: unknown pool '", pool_kind, "'");
  TORCH_CHECK(options.gpsa_layers() <= options.depth(), "ViT: gpsa_layers ", options.gpsa_layers(), " > depth ",
              options.depth());
  const int64_t dim = options.embed_dim();
  const bool hybrid = !options.backbone().is_empty();
  patch_embed = register_module("patch_embed", PatchEmbed(PatchEmbedOptions(
      hybrid ? options.backbone_size() : options.img_size(), options.patch_size(),
      hybrid ? options.backbone_channels() : options.in_chans(), dim).backbone(options.backbone())));
  const bool use_cls = pool_kind == "cls";
  // With GPSA the class token joins after the GPSA blocks, so the positional embedding
  // covers the patches only.
  const bool late_cls = use_cls && options.gpsa_layers() > 0;
  const int64_t tokens = patch_embed->num_patches() + (use_cls && !late_cls ? 1 : 0);
  if (use_cls) cls_token = register_parameter("cls_token", torch::zeros({1, 1, dim}));
  const std::string& pe = options.pos_embed();
  TORCH_CHECK(pe == "learned" || pe == "sincos2d" || pe == "none" || pe == "relative", "ViT: unknown pos_embed '",
              pe, "'");
  if (pe == "learned") pos_embed = register_parameter("pos_embed", torch::zeros({1, tokens, dim}));
  if (pe == "sincos2d")
    pos_embed = register_buffer("pos_embed", sincos_2d_pos_embed(patch_embed->grid_size(), dim, use_cls && !late_cls));
  pos_drop = register_module("pos_drop", nn::Dropout(options.drop_rate()));
  blocks = register_module("blocks", nn::Sequential());
  for (int64_t i = 0; i < options.depth(); ++i) {
    const double dpr = options.depth() > 1 ? options.drop_path_rate() * double(i) / double(options.depth() - 1) : 0.0;
    const bool gpsa = i < options.gpsa_layers();
    blocks->push_back(TransformerBlock(TransformerBlockOptions(dim, options.num_heads())
                                           .drop_path(dpr)
                                           .attn_window(options.attn_window())
                                           .grid(patch_embed->grid_size())
                                           .prefix_tokens(use_cls && !gpsa ? 1 : 0)
                                           .relative_position(pe == "relative")
                                           .gated_positional(gpsa)
                                           .locality_strength(options.locality_strength())
                                           .attn_scale_by_sqrt_dk(options.attn_scale_by_sqrt_dk())
                                           .attn_temperature(options.attn_temperature())
                                           .layer_scale_init(options.layer_scale_init())
                                           .rezero(options.rezero())
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
  if (pool_kind == "seq") attention_pool = register_module("attention_pool", nn::Linear(dim, 1));
  head = register_module("head", nn::Linear(dim, options.num_classes()));

  // timm's initialisation: truncated normal (0.02) for the transformer's Linear weights
  // and pos_embed, zero biases, N(0, 1e-6) class token; convolutions (patch projection,
  // backbone) keep their own. GPSA blocks then restore their convolution-like start.
  torch::NoGradGuard no_grad;
  if (pe == "learned") trunc_normal_(pos_embed, 0.02);
  if (use_cls) cls_token.normal_(0.0, 1e-6);
  for (auto& m : modules(false)) {
    if (auto* lin = m->as<nn::Linear>()) {
      trunc_normal_(lin->weight, 0.02);
      if (lin->bias.defined()) lin->bias.zero_();
    }
  }
  for (int64_t i = 0; i < options.gpsa_layers(); ++i) blocks->at<TransformerBlockImpl>(size_t(i)).attn->init_locality();
}

torch::Tensor ViTImpl::with_cls(const torch::Tensor& tokens) {
  return torch::cat({cls_token.to(tokens.scalar_type()).expand({tokens.size(0), -1, -1}), tokens}, 1);  // (B, N+1, D)
}

torch::Tensor ViTImpl::embed(const torch::Tensor& x, bool map) {
  auto t = map ? patch_embed->project(x) : patch_embed(x);  // (B, N, D)
  // Under autocast the projection computes in bf16/fp16; the residual stream stays in the
  // parameters' precision whatever the class-token and positional-embedding knobs (whose
  // additions would otherwise decide it), so those ablations differ in nothing else; or in
  // bf16 under bf16 autocast with residual_in_autocast, the class token and the positions
  // cast to it once per forward pass.
  auto dtype = patch_embed->proj->weight.scalar_type();
  if (options.residual_in_autocast() && compat::autocast_dtype(t.device().type()) == torch::kBFloat16)
    dtype = torch::kBFloat16;
  if (t.scalar_type() != dtype) t = t.to(dtype);
  if (cls_token.defined() && cls_at() == 0) t = with_cls(t);
  return pos_drop(pos_embed.defined() ? t + pos_embed.to(dtype) : t);
}

torch::Tensor ViTImpl::run_block(size_t i, const torch::Tensor& t) {
  const bool joins = cls_token.defined() && cls_at() > 0;
  auto y = blocks->at<TransformerBlockImpl>(i).forward(joins && i == cls_at() ? with_cls(t) : t);
  return joins && cls_at() == blocks->size() && i + 1 == blocks->size() ? with_cls(y) : y;
}

torch::Tensor ViTImpl::forward_features(const torch::Tensor& x) {
  auto t = embed(x, false);
  // Pre-norm blocks chain: each passes the next its normalised input, computed with its
  // own last residual add in one pass (TransformerBlockImpl::forward_chained). Not across
  // the class token's late join (GPSA), which changes the tokens in between.
  const bool joins = cls_token.defined() && cls_at() > 0;
  torch::Tensor n;  // norm1 of t for block i, from block i - 1, or undefined
  for (size_t i = 0; i < blocks->size(); ++i) {
    auto& block = blocks->at<TransformerBlockImpl>(i);
    if (joins && i == cls_at()) {
      t = with_cls(t);
      n = torch::Tensor();
    }
    if (!block.chains()) {
      t = block.forward(t);
      continue;
    }
    const bool chain = i + 1 < blocks->size() && !(joins && i + 1 == cls_at()) &&
                       blocks->at<TransformerBlockImpl>(i + 1).chains();
    std::tie(t, n) = block.forward_chained(t, n, chain ? &blocks->at<TransformerBlockImpl>(i + 1).norm1 : nullptr);
  }
  if (joins && cls_at() == blocks->size()) t = with_cls(t);
  return norm.forward(t);
}

std::vector<Stage> ViTImpl::stages() {
  std::vector<Stage> out;
  const auto& backbone = patch_embed->backbone;
  const std::string bb = "patch_embed.backbone.";
  if (!backbone.is_empty()) {
    if (auto* resnet = backbone.ptr()->as<ResNetImpl>()) {
      for (auto stage : resnet->stages()) {
        for (auto& m : stage.modules) m = bb + m;
        out.push_back({bb + stage.name, stage.modules, stage.forward});
      }
    } else if (auto* tokenizer = backbone.ptr()->as<ConvTokenizerImpl>()) {
      for (size_t i = 0; i < tokenizer->conv_layers->size(); ++i) {
        auto layer = tokenizer->conv_layers->ptr<nn::SequentialImpl>(i);
        const std::string name = bb + "conv_layers." + std::to_string(i);
        out.push_back({name, {name}, [layer](const torch::Tensor& x) { return layer->forward(x); }});
      }
    } else {
      torch::nn::AnyModule any = backbone;
      out.push_back({"patch_embed.backbone", {"patch_embed.backbone"},
                     [any](const torch::Tensor& x) mutable { return any.forward(x); }});
    }
  }
  std::vector<std::string> embed_modules = {backbone.is_empty() ? "patch_embed" : "patch_embed.proj"};
  if (cls_token.defined()) embed_modules.push_back("cls_token");
  if (pos_embed.defined()) embed_modules.push_back("pos_embed");
  const bool map = !backbone.is_empty();
  out.push_back({"embed", embed_modules, [this, map](const torch::Tensor& x) { return embed(x, map); }});
  for (size_t i = 0; i < blocks->size(); ++i) {
    const std::string name = "blocks." + std::to_string(i);
    out.push_back({name, {name}, [this, i](const torch::Tensor& t) { return run_block(i, t); }});
  }
  std::vector<std::string> head_modules = {"norm"};
  if (attention_pool) head_modules.push_back("attention_pool");
  head_modules.push_back("head");
  out.push_back({"head", head_modules, [this](const torch::Tensor& t) { return head(pool(norm.forward(t))); }});
  return out;
}

torch::Tensor ViTImpl::pool(const torch::Tensor& t) {
  if (cls_token.defined()) return t.select(1, 0);
  if (!attention_pool) return t.mean(1);
  auto weights = attention_pool(t).softmax(1);              // (B, N, 1)
  return torch::matmul(weights.transpose(1, 2), t).squeeze(1);  // (B, D)
}

torch::Tensor ViTImpl::forward(const torch::Tensor& x) { return head(pool(forward_features(x))); }

}  // namespace biaslab
