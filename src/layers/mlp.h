#pragma once
// Transformer feed-forward block: fc1 -> GELU -> dropout -> fc2 -> dropout (timm's `Mlp`).
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "export/scriptable.h"

namespace biaslab {

struct MlpOptions {
  MlpOptions(int64_t in_features, int64_t hidden_features)
      : in_features_(in_features), hidden_features_(hidden_features) {}
  /// Input and output width.
  TORCH_ARG(int64_t, in_features);
  /// Hidden width (dim * mlp_ratio in a ViT).
  TORCH_ARG(int64_t, hidden_features);
  /// Dropout after the activation and after fc2.
  TORCH_ARG(double, drop) = 0.0;
};

class MlpImpl : public torch::nn::Cloneable<MlpImpl>, public Scriptable {
 public:
  explicit MlpImpl(const MlpOptions& options);
  void reset() override;
  /// x: (..., in_features) -> (..., in_features)
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
  /// act(fc1(x)): through biaslab's fused bias + GELU kernel under runtime.kernels=fused
  /// on the CPU (layers/bias_gelu_kernel.h), LibTorch's operators otherwise.
  torch::Tensor fc1_act(const torch::Tensor& x);

  MlpOptions options;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::GELU act{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Mlp);

}  // namespace biaslab
