#include "engine/ema.h"

#include <torch/torch.h>

namespace biaslab {

Ema::Ema(torch::nn::Module& model, torch::nn::Module& shadow, double decay)
    : model_params_(model.parameters()), shadow_params_(shadow.parameters()), model_buffers_(model.buffers()),
      shadow_buffers_(shadow.buffers()), shadow_(shadow), decay_(decay) {
  TORCH_CHECK(model_params_.size() == shadow_params_.size() && model_buffers_.size() == shadow_buffers_.size(),
              "Ema: the shadow model has a different structure");
  TORCH_CHECK(decay >= 0.0 && decay < 1.0, "Ema: decay must be in [0, 1), got ", decay);
  for (auto& p : shadow_params_) p.set_requires_grad(false);
  reset_to_model();
}

void Ema::reset_to_model() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < model_params_.size(); ++i) shadow_params_[i].copy_(model_params_[i]);
  for (size_t i = 0; i < model_buffers_.size(); ++i) shadow_buffers_[i].copy_(model_buffers_[i]);
}

void Ema::update() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < model_params_.size(); ++i) shadow_params_[i].lerp_(model_params_[i], 1.0 - decay_);
  // Statistics copied from the live model would normalise the averaged weights with
  // another network's activations: early in training that leaves the shadow at chance.
  for (size_t i = 0; i < model_buffers_.size(); ++i) {
    if (shadow_buffers_[i].is_floating_point())
      shadow_buffers_[i].lerp_(model_buffers_[i], 1.0 - decay_);
    else
      shadow_buffers_[i].copy_(model_buffers_[i]);
  }
}

}  // namespace biaslab
