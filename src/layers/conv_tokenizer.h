#pragma once
// Convolutional tokenizer of the Compact Convolutional Transformer (Hassani et al. 2021,
// arXiv:2104.05704): a few [conv k x k (stride 1, no bias) - ReLU - max-pool 3x3 stride 2]
// layers turn the image into a feature map whose cells become tokens. It gives the
// transformer a convolutional front end (locality, weight sharing) at small cost.
// Names as the reference: conv_layers.<i>.0 is layer i's convolution.
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <vector>

#include "export/scriptable.h"

namespace biaslab {

struct ConvTokenizerOptions {
  ConvTokenizerOptions(int64_t in_chans, std::vector<int64_t> widths)
      : in_chans_(in_chans), widths_(std::move(widths)) {}
  TORCH_ARG(int64_t, in_chans);
  /// Output channels of each layer; one layer per entry (each halves the resolution).
  TORCH_ARG(std::vector<int64_t>, widths);
  /// Convolution kernel size (odd; padding keeps the size before pooling).
  TORCH_ARG(int64_t, kernel_size) = 3;
};

class ConvTokenizerImpl : public torch::nn::Cloneable<ConvTokenizerImpl>, public Scriptable {
 public:
  explicit ConvTokenizerImpl(const ConvTokenizerOptions& options);
  void reset() override;
  /// (B, in_chans, H, W) -> (B, widths.back(), feature_size(H), feature_size(W))
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
  int64_t num_features() const { return options.widths().back(); }
  /// Side of the output map for an input side `image_size` (each pooling rounds up).
  int64_t feature_size(int64_t image_size) const;

  ConvTokenizerOptions options;
  torch::nn::ModuleList conv_layers{nullptr};  // each a Sequential(conv, ReLU, max-pool)
};
TORCH_MODULE(ConvTokenizer);

}  // namespace biaslab
