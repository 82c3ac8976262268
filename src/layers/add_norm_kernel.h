#pragma once
// The residual add and the LayerNorm that follows it, fused, for the CPU, forward and
// backward: a pre-norm transformer block computes y = x + a (the residual stream plus
// the attention branch) and then LayerNorm(y) for the MLP. Eager LibTorch runs that as
// three passes over the tokens (the add, the norm, and under bf16 autocast the cast of
// the fp32 norm output to bf16 for the next projection), and as three again in backward.
// Here one pass per row reads x and a, writes y and the normalised row (in bf16 directly
// when the consumer runs under bf16 autocast), with the statistics in fp32; the backward
// pass reads y, the two incoming gradients and writes the one gradient both inputs get.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <utility>

namespace biaslab {

/// {y, n}: y = x + a in the dtype x + a has (float, or bf16 when both are), and
///   n = (y - mean(y)) / sqrt(var(y) + eps) * weight + bias over the last dimension, in
///   `n_dtype` (float or bf16); mean and variance in fp32 whatever the inputs.
/// x, a: CPU tensors of one shape (..., C), float or bf16 each; weight, bias: (C) float.
/// Differentiable in x, a, weight and bias (not twice).
std::pair<at::Tensor, at::Tensor> add_layer_norm_cpu(const at::Tensor& x, const at::Tensor& a,
                                                     const at::Tensor& weight, const at::Tensor& bias, double eps,
                                                     c10::ScalarType n_dtype);

/// Whether this build runs the kernel's rows on LibTorch's intra-op threads (compiled
/// with OpenMP; without, at::parallel_for is a serial loop).
bool add_layer_norm_cpu_parallel();

/// Whether add_layer_norm_cpu serves these inputs: CPU, float or bf16, same shape, a
/// (C) float weight and bias for their last dimension.
bool add_layer_norm_cpu_supports(const at::Tensor& x, const at::Tensor& a, const at::Tensor& weight,
                                 const at::Tensor& bias);

}  // namespace biaslab
