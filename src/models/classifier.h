#pragma once
// The interface every model family implements: images in, class logits out.
// The trainer, evaluation and export only ever see this type.
#include <torch/nn/module.h>

#include <memory>

namespace biaslab {

class Classifier : public torch::nn::Module {
 public:
  /// x: float (B, C, H, W) -> logits (B, num_classes)
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
};

using ClassifierPtr = std::shared_ptr<Classifier>;

}  // namespace biaslab
