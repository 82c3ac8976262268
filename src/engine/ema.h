#pragma once
// Exponential moving average of a model's weights (Polyak averaging, as timm's
// ModelEmaV2 and torchvision's ExponentialMovingAverage with use_buffers): after every
// applied update, shadow = decay * shadow + (1 - decay) * model for parameters and for
// floating-point buffers (BatchNorm statistics), so that the shadow's normalisation
// statistics are averaged like the weights they normalise; integer buffers (BatchNorm's
// batch counter) are copied.
#include <torch/nn/module.h>

namespace biaslab {

class Ema {
 public:
  /// `shadow` must have the same structure as `model`; it starts as a copy of it.
  Ema(torch::nn::Module& model, torch::nn::Module& shadow, double decay);
  void update();
  /// Copies the model's weights into the shadow (start of a fresh run).
  void reset_to_model();
  torch::nn::Module& shadow() { return shadow_; }
  double decay() const { return decay_; }

 private:
  std::vector<torch::Tensor> model_params_, shadow_params_, model_buffers_, shadow_buffers_;
  torch::nn::Module& shadow_;
  double decay_;
};

}  // namespace biaslab
