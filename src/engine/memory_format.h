#pragma once
// runtime.memory_format: convolutions run on channels-last (NHWC) tensors where that is
// faster. Only the 4-D weights are converted: a convolution whose weight is channels-last
// runs channels-last (its input converted on the way in), and its output stays so through
// BatchNorm, activations and residual additions. Values are unchanged; results can differ
// in the last bits from a contiguous run (another summation order).
#include <torch/nn/module.h>

#include "config/config.h"

namespace biaslab {

/// "channels_last"; "auto": channels-last for the ResNets, measured faster on this project's
/// CPU in fp32 and bf16 (docs/performance.md); the ViT (whose only convolution is the patch
/// embedding) and the hybrids (measured no faster: the transformer dominates) stay contiguous.
bool uses_channels_last(const Config& cfg);

/// Puts every 4-D parameter and buffer of `model` in channels-last layout, in place.
void to_channels_last(torch::nn::Module& model);

}  // namespace biaslab
