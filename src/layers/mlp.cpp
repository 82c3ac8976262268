#include "layers/mlp.h"

#include <torch/torch.h>

#include "core/runtime.h"
#include "layers/bias_gelu_kernel.h"
#include "layers/linear.h"

namespace biaslab {

MlpImpl::MlpImpl(const MlpOptions& options_) : options(options_) { reset(); }

void MlpImpl::reset() {
  fc1 = register_module("fc1", torch::nn::Linear(options.in_features(), options.hidden_features()));
  act = register_module("act", torch::nn::GELU());
  fc2 = register_module("fc2", torch::nn::Linear(options.hidden_features(), options.in_features()));
  drop = register_module("drop", torch::nn::Dropout(options.drop()));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return drop(linear(fc2, drop(fc1_act(x))));
}

torch::Tensor MlpImpl::fc1_act(const torch::Tensor& x) {
  // biaslab's bias + GELU kernel under runtime.kernels=fused (the exact GELU, on the
  // CPU): fc1 then runs without its bias, which the kernel adds. `auto` keeps LibTorch's
  // addmm + gelu: the fusion measured no faster (docs/performance.md, "Fused bias + GELU").
  const bool fusable = kernel_mode() == KernelMode::Fused && act->options.approximate() == "none" &&
                       fc1->bias.defined() && x.device().is_cpu();
  if (!fusable) return act(linear(fc1, x));
  auto h = torch::linear(x, fc1->weight);
  if (!bias_gelu_cpu_supports(h, fc1->bias)) return act(h + fc1->bias);
  return bias_gelu_cpu(h, fc1->bias);
}

}  // namespace biaslab
