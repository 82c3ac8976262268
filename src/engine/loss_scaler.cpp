#include "engine/loss_scaler.h"

#include <torch/torch.h>

namespace biaslab {

void LossScaler::unscale(const std::vector<torch::Tensor>& params) const {
  torch::NoGradGuard no_grad;
  const double inv = 1.0 / scale_;
  for (const auto& p : params)
    if (p.grad().defined()) p.grad().mul_(inv);
}

void LossScaler::update(bool found_non_finite) {
  if (found_non_finite) {
    scale_ = std::max(scale_ * 0.5, 1.0);
    good_steps_ = 0;
  } else if (++good_steps_ >= growth_interval_) {
    scale_ *= 2.0;
    good_steps_ = 0;
  }
}

}  // namespace biaslab
