#include "layers/kernel_rows.h"

#include <algorithm>
#include <cstring>

#include "layers/kernel_target.h"

namespace biaslab::kernel_rows {

bool is_float_or_bf16(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16;
}

// bf16 is the high half of an fp32.
BIASLAB_TARGET_CLONES void bf16_to_float(const uint16_t* src, float* dst, int64_t c) {
#pragma omp simd
  for (int64_t i = 0; i < c; ++i) {
    const uint32_t bits = uint32_t(src[i]) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    dst[i] = f;
  }
}

BIASLAB_TARGET_CLONES void float_to_bf16(const float* src, uint16_t* dst, int64_t c) {
#pragma omp simd
  for (int64_t i = 0; i < c; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &src[i], sizeof bits);
    const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    dst[i] = src[i] != src[i] ? uint16_t(0x7FC0) : uint16_t(rounded);
  }
}

const float* read_row(const at::Tensor& t, int64_t row, int64_t c, float* buf) {
  if (t.scalar_type() == at::kFloat) return static_cast<const float*>(t.data_ptr()) + row * c;
  bf16_to_float(static_cast<const uint16_t*>(t.data_ptr()) + row * c, buf, c);
  return buf;
}

float* write_row(at::Tensor& t, int64_t row, int64_t c, float* buf) {
  return t.scalar_type() == at::kFloat ? static_cast<float*>(t.data_ptr()) + row * c : buf;
}

void finish_row(at::Tensor& t, int64_t row, int64_t c, const float* buf) {
  if (t.scalar_type() != at::kFloat) float_to_bf16(buf, static_cast<uint16_t*>(t.data_ptr()) + row * c, c);
}

void store_row(at::Tensor& t, int64_t row, int64_t c, const float* values) {
  if (t.scalar_type() == at::kFloat)
    std::copy_n(values, c, static_cast<float*>(t.data_ptr()) + row * c);
  else
    float_to_bf16(values, static_cast<uint16_t*>(t.data_ptr()) + row * c, c);
}

}  // namespace biaslab::kernel_rows
