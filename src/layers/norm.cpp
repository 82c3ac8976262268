#include "layers/norm.h"

#include <torch/torch.h>

namespace biaslab {
namespace nn = torch::nn;

const std::vector<std::string>& image_norm_kinds() {
  static const std::vector<std::string> kinds = {"batchnorm", "groupnorm", "layernorm", "none"};
  return kinds;
}

const std::vector<std::string>& token_norm_kinds() {
  static const std::vector<std::string> kinds = {"layernorm", "batchnorm", "rmsnorm", "none"};
  return kinds;
}

nn::AnyModule make_image_norm(const std::string& kind, int64_t channels) {
  if (kind == "batchnorm") return nn::AnyModule(nn::BatchNorm2d(channels));
  if (kind == "groupnorm") {
    int64_t groups = std::min<int64_t>(32, channels);
    while (channels % groups != 0) --groups;
    return nn::AnyModule(GroupNormFp32(nn::GroupNormOptions(groups, channels)));
  }
  if (kind == "layernorm") return nn::AnyModule(GroupNormFp32(nn::GroupNormOptions(1, channels)));
  if (kind == "none") return nn::AnyModule(nn::Identity());
  TORCH_CHECK(false, "unknown image norm '", kind, "'");
}

nn::AnyModule make_token_norm(const std::string& kind, int64_t dim) {
  if (kind == "layernorm") return nn::AnyModule(LayerNormFp32(nn::LayerNormOptions({dim}).eps(1e-6)));
  if (kind == "batchnorm") return nn::AnyModule(TokenBatchNorm(dim));
  if (kind == "rmsnorm") return nn::AnyModule(RMSNorm(dim));
  if (kind == "none") return nn::AnyModule(nn::Identity());
  TORCH_CHECK(false, "unknown token norm '", kind, "'");
}

namespace {
torch::Tensor in_fp32(const torch::Tensor& x) {
  const auto t = x.scalar_type();
  return t == torch::kBFloat16 || t == torch::kHalf ? x.to(torch::kFloat) : x;
}
}  // namespace

torch::Tensor LayerNormFp32Impl::forward(const torch::Tensor& x) { return LayerNormImpl::forward(in_fp32(x)); }

torch::Tensor GroupNormFp32Impl::forward(const torch::Tensor& x) { return GroupNormImpl::forward(in_fp32(x)); }

TokenBatchNormImpl::TokenBatchNormImpl(int64_t dim_, double eps_, double momentum_)
    : dim(dim_), eps(eps_), momentum(momentum_) {
  reset();
}

void TokenBatchNormImpl::reset() {
  weight = register_parameter("weight", torch::ones({dim}));
  bias = register_parameter("bias", torch::zeros({dim}));
  running_mean = register_buffer("running_mean", torch::zeros({dim}));
  running_var = register_buffer("running_var", torch::ones({dim}));
  num_batches_tracked = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
}

torch::Tensor TokenBatchNormImpl::forward(const torch::Tensor& x) {
  if (is_training()) num_batches_tracked.add_(1);
  auto flat = in_fp32(x).reshape({-1, dim});  // (B*N, C): batch_norm normalises each column
  auto y = torch::batch_norm(flat, weight, bias, running_mean, running_var, is_training(), momentum, eps,
                             /*cudnn_enabled=*/true);
  return y.view(x.sizes());
}

RMSNormImpl::RMSNormImpl(int64_t dim_, double eps_) : dim(dim_), eps(eps_) { reset(); }

void RMSNormImpl::reset() { weight = register_parameter("weight", torch::ones({dim})); }

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  auto xf = x.to(torch::kFloat);
  auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (y * weight).to(x.scalar_type());
}

}  // namespace biaslab
