#include "layers/transformer_block.h"

#include <torch/torch.h>

namespace biaslab {

TransformerBlockImpl::TransformerBlockImpl(const TransformerBlockOptions& options_) : options(options_) {
  reset();
}

void TransformerBlockImpl::reset() {
  const int64_t dim = options.dim();
  TORCH_CHECK(options.norm_placement() == "pre" || options.norm_placement() == "post",
              "TransformerBlock: norm_placement must be pre or post, got '", options.norm_placement(), "'");
  norm1 = make_token_norm(options.norm(), dim);
  register_module("norm1", norm1.ptr());
  attn = register_module("attn", Attention(AttentionOptions(dim, options.num_heads())
                                                .qkv_bias(options.qkv_bias())
                                                .attn_drop(options.attn_drop())
                                                .proj_drop(options.drop())
                                                .window(options.attn_window())
                                                .grid(options.grid())
                                                .prefix_tokens(options.prefix_tokens())
                                                .relative_position(options.relative_position())
                                                .gated_positional(options.gated_positional())
                                                .locality_strength(options.locality_strength())));
  norm2 = make_token_norm(options.norm(), dim);
  register_module("norm2", norm2.ptr());
  const auto hidden = static_cast<int64_t>(double(dim) * options.mlp_ratio());
  mlp = register_module("mlp", Mlp(MlpOptions(dim, hidden).drop(options.drop())));
  TORCH_CHECK(!(options.rezero() && options.layer_scale_init() > 0), "TransformerBlock: ReZero and LayerScale exclude each other");
  if (options.layer_scale_init() > 0 || options.rezero()) {
    const int64_t width = options.rezero() ? 1 : dim;
    const double init = options.rezero() ? 0.0 : options.layer_scale_init();
    ls1 = register_module("ls1", LayerScale(width, init));
    ls2 = register_module("ls2", LayerScale(width, init));
  }
  drop_path = register_module("drop_path", DropPath(options.drop_path()));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  const bool res = options.residual();
  // A residual branch: optional LayerScale gain, then stochastic depth.
  auto branch = [&](const torch::Tensor& t, LayerScale& ls) { return drop_path(ls ? ls(t) : t); };
  if (options.norm_placement() == "post") {
    auto a = branch(attn(x), ls1);
    auto y = norm1.forward(res ? x + a : a);
    auto m = branch(mlp(y), ls2);
    return norm2.forward(res ? y + m : m);
  }
  auto a = branch(attn(norm1.forward(x)), ls1);
  auto y = res ? x + a : a;
  auto m = branch(mlp(norm2.forward(y)), ls2);
  return res ? y + m : m;
}

}  // namespace biaslab
