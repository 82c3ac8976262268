#pragma once
// Fused multi-head self-attention for the CPU, forward and backward, for short sequences
// (tens to a few hundred tokens). Eager LibTorch runs attention as two batched matrix
// products and a softmax over a materialised (B, H, N, N) tensor; for N = 50 and head
// width 32, 1.13's fp32 `bmm` loops over the B*H slices and calls BLAS once per tiny
// 50x50 product, which made it a third of a ViT training step (docs/performance.md).
// Here one task per (batch, head) tile computes the scores, the softmax and the product
// with V in cache, through a register-blocked micro-kernel, and keeps only the rows'
// log-sum-exp for the backward pass, which recomputes the scores (the flash-attention
// scheme of Dao et al. 2022, arXiv:2205.14135, without its blocking, unnecessary at
// these lengths).
#include <ATen/core/Tensor.h>

namespace biaslab {

/// Attention over the output of a fused qkv projection.
///   qkv:   (B, N, 3C) float or bfloat16, laid out as [q | k | v] with heads of width
///          C / heads inside each. bf16 stays bf16 in and out (saved for backward as
///          such): each tile's rows are packed for AVX512-BF16's products where the CPU
///          has them (layers/bf16_gemm.h; probabilities and score gradients rounded to
///          bf16 as the products' operands), else widened to fp32 for the fp32 tile;
///          scores, softmax, log-sum-exp and sums are fp32 either way;
///   bias:  additive logits (heads, N, N) float, or undefined; differentiable;
///   mask:  (N, N) bool, true where query i may attend key j, or undefined;
///   scale: multiplies q . k (1 / sqrt(head width)).
/// Returns (B, N, C): the heads' outputs side by side, i.e. softmax(q k^T * scale + bias) v
/// per head, the layout the output projection reads. Differentiable in qkv and bias.
at::Tensor attention_cpu(const at::Tensor& qkv, int64_t heads, const at::Tensor& bias, const at::Tensor& mask,
                         double scale);

/// Whether this build runs the kernel's tiles on LibTorch's intra-op threads (its file
/// was compiled with OpenMP; without, at::parallel_for is a serial loop).
bool attention_cpu_parallel();

/// Whether attention_cpu serves an input on this device with this dtype (CPU, float or bf16).
bool attention_cpu_supports(const at::Tensor& qkv);

}  // namespace biaslab
