#include "layers/init.h"

#include <torch/torch.h>

#include <cmath>

namespace biaslab {

void trunc_normal_(torch::Tensor t, double std) {
  torch::NoGradGuard no_grad;
  // Phi(x) = (1 + erf(x / sqrt 2)) / 2; sample u in [2 Phi(-2) - 1, 2 Phi(2) - 1], then invert.
  const double hi = std::erf(2.0 / std::sqrt(2.0));
  t.uniform_(-hi, hi).erfinv_().mul_(std * std::sqrt(2.0)).clamp_(-2.0 * std, 2.0 * std);
}

}  // namespace biaslab
