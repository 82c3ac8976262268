#pragma once
// runtime.memory_format: convolutions run on channels-last (NHWC) tensors where that is
// faster. Only the 4-D weights are converted: a convolution whose weight is channels-last
// runs channels-last (its input converted on the way in), and its output stays so through
// BatchNorm, activations and residual additions. Values are unchanged; results can differ
// in the last bits from a contiguous run (another summation order).
#include <torch/nn/module.h>

#include <string>

#include "config/config.h"

namespace biaslab {

/// The first layer of `model` (on the CPU) that channels-last would run into a known oneDNN
/// defect on this process's CPU, described ("layer1.0.downsample.0: 1x1 convolution,
/// stride 2, 4 input channels, ..."); "" when there is none. The defect: oneDNN's AVX2
/// kernels (a CPU without AVX-512, or ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA capping it
/// there) corrupt the heap in the backward pass of a channels-last 1x1 convolution with
/// stride > 1 and fewer than 8 input channels ("double free or corruption", SIGSEGV):
/// seen with Debian's LibTorch 1.13 (oneDNN 2.6) and PyPI's torch 2.15 alike
/// (docs/performance.md, "Memory format and a oneDNN defect").
std::string channels_last_hazard(const torch::nn::Module& model);

/// Whether `model` (already on its device) runs channels-last: "channels_last"; "auto":
/// channels-last for the ResNets, measured faster on this project's CPU in fp32 and bf16
/// (docs/performance.md); the ViT (whose only convolution is the patch embedding) and the
/// hybrids (measured no faster: the transformer dominates) stay contiguous. Where
/// channels_last_hazard() names a layer, "auto" is contiguous and an explicit
/// "channels_last" is a ConfigError naming the layer.
bool uses_channels_last(const Config& cfg, const torch::nn::Module& model);

/// Puts every 4-D parameter and buffer of `model` in channels-last layout, in place.
void to_channels_last(torch::nn::Module& model);

}  // namespace biaslab
