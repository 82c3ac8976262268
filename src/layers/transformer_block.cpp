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
                                                .proj_drop(options.drop())));
  norm2 = make_token_norm(options.norm(), dim);
  register_module("norm2", norm2.ptr());
  const auto hidden = static_cast<int64_t>(double(dim) * options.mlp_ratio());
  mlp = register_module("mlp", Mlp(MlpOptions(dim, hidden).drop(options.drop())));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  const bool res = options.residual();
  if (options.norm_placement() == "post") {
    auto a = attn(x);
    auto y = norm1.forward(res ? x + a : a);
    auto m = mlp(y);
    return norm2.forward(res ? y + m : m);
  }
  auto a = attn(norm1.forward(x));
  auto y = res ? x + a : a;
  auto m = mlp(norm2.forward(y));
  return res ? y + m : m;
}

}  // namespace biaslab
