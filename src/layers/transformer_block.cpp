#include "layers/transformer_block.h"

#include <torch/torch.h>

namespace biaslab {

TransformerBlockImpl::TransformerBlockImpl(const TransformerBlockOptions& options_) : options(options_) {
  reset();
}

void TransformerBlockImpl::reset() {
  const int64_t dim = options.dim();
  norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-6)));
  attn = register_module("attn", Attention(AttentionOptions(dim, options.num_heads())
                                                .qkv_bias(options.qkv_bias())
                                                .attn_drop(options.attn_drop())
                                                .proj_drop(options.drop())));
  norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-6)));
  const auto hidden = static_cast<int64_t>(double(dim) * options.mlp_ratio());
  mlp = register_module("mlp", Mlp(MlpOptions(dim, hidden).drop(options.drop())));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  auto y = x + attn(norm1(x));
  return y + mlp(norm2(y));
}

}  // namespace biaslab
