#include "engine/memory_format.h"

#include <torch/torch.h>

namespace biaslab {

bool uses_channels_last(const Config& cfg) {
  const std::string& f = cfg.runtime.memory_format;
  if (f == "auto") return cfg.model.family == "resnet";
  return f == "channels_last";
}

void to_channels_last(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  auto convert = [](torch::Tensor& t) {
    if (t.defined() && t.dim() == 4) t.set_data(t.contiguous(at::MemoryFormat::ChannelsLast));
  };
  for (auto& p : model.parameters()) convert(p);
  for (auto& b : model.buffers()) convert(b);
}

}  // namespace biaslab
