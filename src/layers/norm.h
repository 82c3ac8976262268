#pragma once
// Normalisation layers chosen by name: the norm ablation is a config value.
//   images (B, C, H, W): batchnorm | groupnorm (32 groups, or the largest divisor of C
//                        below that) | layernorm (GroupNorm with one group: per sample over
//                        C, H, W) | none
//   tokens (B, N, C):    layernorm | batchnorm (statistics over all B x N tokens per
//                        channel) | rmsnorm | none
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "export/scriptable.h"

namespace biaslab {

const std::vector<std::string>& image_norm_kinds();
const std::vector<std::string>& token_norm_kinds();

/// A norm for (B, C, H, W) feature maps; throws c10::Error for an unknown kind.
torch::nn::AnyModule make_image_norm(const std::string& kind, int64_t channels);
/// A norm for (B, N, C) tokens; throws c10::Error for an unknown kind.
torch::nn::AnyModule make_token_norm(const std::string& kind, int64_t dim);

/// LayerNorm and GroupNorm that normalise a bf16/fp16 input in fp32 (returning fp32), as
/// CUDA autocast does for these ops; LibTorch 1.13's CPU kernels reject a low-precision
/// input with fp32 parameters. Parameter names are the base class's.
class LayerNormFp32Impl : public torch::nn::LayerNormImpl, public Scriptable {
 public:
  using torch::nn::LayerNormImpl::LayerNormImpl;
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
};
TORCH_MODULE(LayerNormFp32);

class GroupNormFp32Impl : public torch::nn::GroupNormImpl, public Scriptable {
 public:
  using torch::nn::GroupNormImpl::GroupNormImpl;
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
};
TORCH_MODULE(GroupNormFp32);

/// BatchNorm over tokens: (B, N, C) normalised per channel over all B x N tokens.
/// Parameter and buffer names are BatchNorm's (weight, bias, running_mean, ...).
class TokenBatchNormImpl : public torch::nn::Cloneable<TokenBatchNormImpl>, public Scriptable {
 public:
  explicit TokenBatchNormImpl(int64_t dim, double eps = 1e-5, double momentum = 0.1);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;

  int64_t dim;
  double eps, momentum;
  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
};
TORCH_MODULE(TokenBatchNorm);

/// RMSNorm (Zhang & Sennrich 2019, arXiv:1910.07467): x / sqrt(mean(x^2) + eps) * weight.
class RMSNormImpl : public torch::nn::Cloneable<RMSNormImpl>, public Scriptable {
 public:
  explicit RMSNormImpl(int64_t dim, double eps = 1e-6);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;

  int64_t dim;
  double eps;
  torch::Tensor weight;
};
TORCH_MODULE(RMSNorm);

}  // namespace biaslab
