#pragma once
// The interface every model family implements: images in, class logits out.
// The trainer, evaluation and export only ever see this type.
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace biaslab {

/// One stage of a network, for summaries and analysis: running the stages in order on
/// an image gives forward()'s logits.
struct Stage {
  std::string name;  ///< e.g. "stem", "layer2", "blocks.3", "head"
  /// Names of the submodules and parameters it owns (as in named_parameters(), without
  /// the trailing ".weight"), in the order the stage applies them.
  std::vector<std::string> modules;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
};

class Classifier : public torch::nn::Module {
 public:
  /// x: float (B, C, H, W) -> logits (B, num_classes)
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  /// The network as a chain of stages (see Stage).
  virtual std::vector<Stage> stages() = 0;
};

using ClassifierPtr = std::shared_ptr<Classifier>;

}  // namespace biaslab
