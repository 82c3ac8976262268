#pragma once
// Weight initialisers missing from the LibTorch C++ API.
#include <torch/types.h>

namespace biaslab {

/// Fills `t` in place from N(0, std^2) truncated to [-2 std, 2 std] (timm's
/// trunc_normal_ with its usual bounds), by inverse-CDF sampling.
void trunc_normal_(torch::Tensor t, double std);

}  // namespace biaslab
