#include "engine/memory_format.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cstdlib>

#include "core/cpu_info.h"
#include "core/errors.h"
#include "core/torch_compat.h"

namespace biaslab {
namespace {

// The instruction set oneDNN's CPU kernels stop at: its cap from the environment when one
// is set (ONEDNN_MAX_CPU_ISA, or DNNL_MAX_CPU_ISA as oneDNN 2.x also reads), else this CPU's.
bool onednn_below_avx512() {
  for (const char* name : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const char* cap = std::getenv(name);
    if (cap == nullptr || *cap == '\0') continue;
    std::string isa(cap);
    for (char& c : isa) c = char(std::toupper(static_cast<unsigned char>(c)));
    if (isa == "ALL" || isa == "DEFAULT") break;
    return isa.rfind("AVX512", 0) != 0 && isa.rfind("AVX10", 0) != 0;
  }
  return !cpu_info().has("avx512f");
}

}  // namespace

std::string channels_last_hazard(const torch::nn::Module& model) {
  const auto params = model.parameters();
  if (params.empty() || !params.front().device().is_cpu() || !onednn_below_avx512()) return "";
  for (const auto& item : model.named_modules()) {
    const auto* conv = dynamic_cast<const torch::nn::Conv2dImpl*>(item.value().get());
    if (conv == nullptr) continue;
    const auto& o = conv->options;
    const bool pointwise = (*o.kernel_size())[0] == 1 && (*o.kernel_size())[1] == 1;
    const bool strided = (*o.stride())[0] > 1 || (*o.stride())[1] > 1;
    if (pointwise && strided && o.in_channels() < 8)
      return fmt::format("{}: 1x1 convolution, stride {}, {} input channel(s), on oneDNN's AVX2 kernels (LibTorch {})",
                         item.key(), (*o.stride())[0], o.in_channels(), compat::torch_version());
  }
  return "";
}

bool uses_channels_last(const Config& cfg, const torch::nn::Module& model) {
  const std::string& f = cfg.runtime.memory_format;
  const bool wanted = f == "channels_last" || (f == "auto" && cfg.model.family == "resnet");
  if (!wanted) return false;
  const std::string hazard = channels_last_hazard(model);
  if (hazard.empty()) return true;
  if (f == "channels_last")
    throw ConfigError("runtime.memory_format: channels_last would crash oneDNN in the backward pass of " + hazard +
                      " (heap corruption with fewer than 8 input channels); expected auto or contiguous, which run "
                      "this model contiguous on this CPU (docs/performance.md, \"Memory format and a oneDNN defect\")");
  return false;
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
