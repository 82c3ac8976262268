#include "layers/transformer_block.h"

#include <torch/torch.h>

#include <utility>

#include "core/runtime.h"
#include "core/torch_compat.h"
#include "layers/add_norm_kernel.h"

namespace biaslab {
namespace {

// {x + a, norm(x + a)}: one pass of biaslab's fused kernel where it applies (a LayerNorm
// over the last dimension, on the CPU, kernels not `reference`), two operators otherwise.
// Under bf16 autocast the normalised tokens come out in bf16, the dtype the next
// projection would cast them to.
std::pair<torch::Tensor, torch::Tensor> add_then_norm(const torch::Tensor& x, const torch::Tensor& a,
                                                      torch::nn::AnyModule& norm) {
  const auto* ln = dynamic_cast<const LayerNormFp32Impl*>(norm.ptr().get());
  if (ln && kernel_mode() != KernelMode::Reference && ln->options.normalized_shape().size() == 1 &&
      add_layer_norm_cpu_supports(x, a, ln->weight, ln->bias)) {
    const auto autocast = compat::autocast_dtype(c10::DeviceType::CPU);
    const auto n_dtype = autocast == torch::kBFloat16 ? torch::kBFloat16 : torch::kFloat;
    return add_layer_norm_cpu(x, a, ln->weight, ln->bias, ln->options.eps(), n_dtype);
  }
  auto y = x + a;
  return {y, norm.forward(y)};
}

}  // namespace

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
                                                .locality_strength(options.locality_strength())
                                                .scale_by_sqrt_dk(options.attn_scale_by_sqrt_dk())
                                                .temperature(options.attn_temperature())));
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

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) { return forward_chained(x, {}, nullptr).first; }

std::pair<torch::Tensor, torch::Tensor> TransformerBlockImpl::forward_chained(const torch::Tensor& x,
                                                                             const torch::Tensor& n1,
                                                                             torch::nn::AnyModule* next_norm) {
  TORCH_CHECK(chains() || (!n1.defined() && !next_norm), "TransformerBlock: only pre-norm residual blocks chain");
  const bool res = options.residual();
  // A bf16 residual stream (ViTOptions::residual_in_autocast) stays bf16 through the block:
  // what LayerScale's fp32 gains or an fp32 norm would promote is cast back.
  auto stream = [&](const torch::Tensor& t) {
    return x.scalar_type() == torch::kBFloat16 && t.scalar_type() != torch::kBFloat16 ? t.to(torch::kBFloat16) : t;
  };
  // A residual branch: optional LayerScale gain, then stochastic depth.
  auto branch = [&](const torch::Tensor& t, LayerScale& ls) { return stream(drop_path(ls ? ls(t) : t)); };
  if (options.norm_placement() == "post") {
    auto a = branch(attn(x), ls1);
    auto y = stream(norm1.forward(res ? x + a : a));
    auto m = branch(mlp(y), ls2);
    return {stream(norm2.forward(res ? y + m : m)), {}};
  }
  auto a = branch(attn(n1.defined() ? n1 : norm1.forward(x)), ls1);
  if (!res) return {branch(mlp(norm2.forward(a)), ls2), {}};
  auto [y, n] = add_then_norm(x, a, norm2);
  auto m = branch(mlp(n), ls2);
  if (next_norm) return add_then_norm(y, m, *next_norm);
  return {y + m, {}};
}

}  // namespace biaslab
