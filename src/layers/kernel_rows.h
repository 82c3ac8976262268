#pragma once
// Rows of float or bf16 tensors as fp32, for the fused CPU kernels that compute in fp32
// whatever their inputs' dtype (src/layers/*_kernel.cpp). A row of a float tensor is
// used in place; a bf16 row is converted into a caller's buffer, and an output row
// computed there is rounded into the tensor (round to nearest even, as LibTorch's casts).
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace biaslab::kernel_rows {

/// Rows per task, and per partial sum of a parameter's gradient over rows: fixed, so the
/// gradients' summation order (and so their bits) does not depend on the thread count.
constexpr int64_t kRowsPerChunk = 64;
inline int64_t chunks_of(int64_t rows) { return (rows + kRowsPerChunk - 1) / kRowsPerChunk; }

/// Whether t is float or bf16.
bool is_float_or_bf16(const at::Tensor& t);

/// bf16 (as its bits) -> fp32, and fp32 -> bf16 rounded to nearest even (NaN stays a
/// quiet NaN), for c values, in loops the compiler vectorises.
void bf16_to_float(const uint16_t* src, float* dst, int64_t c);
void float_to_bf16(const float* src, uint16_t* dst, int64_t c);

/// Row `row` of a contiguous (rows, c) float or bf16 tensor as fp32: the row itself for
/// a float tensor, else converted into `buf`.
const float* read_row(const at::Tensor& t, int64_t row, int64_t c, float* buf);

/// Where to compute row `row` of an output: in place for a float tensor, else in `buf`,
/// which finish_row then rounds into the tensor.
float* write_row(at::Tensor& t, int64_t row, int64_t c, float* buf);
void finish_row(at::Tensor& t, int64_t row, int64_t c, const float* buf);

/// Writes fp32 values into row `row` of a float or bf16 tensor.
void store_row(at::Tensor& t, int64_t row, int64_t c, const float* values);

}  // namespace biaslab::kernel_rows
