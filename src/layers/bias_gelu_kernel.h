#pragma once
// The first MLP projection's bias add and the GELU after it, fused, for the CPU, forward
// and backward. Eager LibTorch computes fc1 as one addmm (which first copies the bias
// into every output row) and the GELU as a second pass, then in backward a GELU-backward
// pass and a separate reduction of its output for the bias gradient. Here the projection
// runs without its bias, and one pass per row adds the bias and applies the GELU (in
// fp32, the row read and written in the projection's dtype); the backward pass writes
// the input gradient and sums the bias gradient in the same pass.
#include <ATen/core/Tensor.h>

namespace biaslab {

/// gelu(h + bias) with the exact (erf) GELU, computed in fp32 and returned in h's dtype.
/// erf is Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7) on a vectorised exp, so the
/// result is within ~1e-7 * |h + bias| of LibTorch's GELU.
/// h: CPU (..., C) float or bf16; bias: (C) float. Differentiable in h and bias (not twice).
at::Tensor bias_gelu_cpu(const at::Tensor& h, const at::Tensor& bias);

/// Whether bias_gelu_cpu serves these inputs.
bool bias_gelu_cpu_supports(const at::Tensor& h, const at::Tensor& bias);

}  // namespace biaslab
