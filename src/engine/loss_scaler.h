#pragma once
// Dynamic loss scaling for fp16 training (what torch.cuda.amp.GradScaler does):
// the loss is multiplied by `scale` before backward, gradients are divided by it
// before the update; a step with non-finite gradients is skipped and the scale
// halved; after `growth_interval` good steps in a row the scale doubles.
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace biaslab {

class LossScaler {
 public:
  explicit LossScaler(double init_scale = 65536.0, int64_t growth_interval = 2000)
      : scale_(init_scale), growth_interval_(growth_interval) {}
  double scale() const { return scale_; }
  torch::Tensor scale_loss(const torch::Tensor& loss) const { return loss * scale_; }
  /// Divides every gradient by the scale.
  void unscale(const std::vector<torch::Tensor>& params) const;
  /// Records whether the step's gradients were finite and adapts the scale.
  void update(bool found_non_finite);
  int64_t good_steps() const { return good_steps_; }
  /// Restores the state saved with a checkpoint.
  void restore(double scale, int64_t good_steps) {
    scale_ = scale;
    good_steps_ = good_steps;
  }

 private:
  double scale_;
  int64_t growth_interval_;
  int64_t good_steps_ = 0;
};

}  // namespace biaslab
