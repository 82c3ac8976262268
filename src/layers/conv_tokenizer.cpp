#include "layers/conv_tokenizer.h"

#include <torch/torch.h>

namespace biaslab {
namespace nn = torch::nn;

ConvTokenizerImpl::ConvTokenizerImpl(const ConvTokenizerOptions& options_) : options(options_) { reset(); }

void ConvTokenizerImpl::reset() {
  TORCH_CHECK(!options.widths().empty(), "ConvTokenizer: needs at least one layer");
  TORCH_CHECK(options.kernel_size() % 2 == 1, "ConvTokenizer: kernel size must be odd, got ", options.kernel_size());
  const int64_t k = options.kernel_size();
  conv_layers = register_module("conv_layers", nn::ModuleList());
  int64_t in = options.in_chans();
  for (int64_t out : options.widths()) {
    nn::Conv2d conv(nn::Conv2dOptions(in, out, k).padding(k / 2).bias(false));
    nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanIn, torch::kReLU);
    conv_layers->push_back(nn::Sequential(conv, nn::ReLU(), nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1))));
    in = out;
  }
}

torch::Tensor ConvTokenizerImpl::forward(const torch::Tensor& x) {
  auto y = x;
  for (const auto& layer : *conv_layers) y = layer->as<nn::Sequential>()->forward(y);
  return y;
}

int64_t ConvTokenizerImpl::feature_size(int64_t image_size) const {
  for (size_t i = 0; i < options.widths().size(); ++i) image_size = (image_size + 1) / 2;
  return image_size;
}

}  // namespace biaslab
