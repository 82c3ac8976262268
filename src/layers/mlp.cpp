#include "layers/mlp.h"

#include <torch/torch.h>

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
  return drop(linear(fc2, drop(act(linear(fc1, x)))));
}

}  // namespace biaslab
