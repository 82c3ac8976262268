#pragma once
// What the fused CPU kernels' inner loops share (src/layers/*_kernel.cpp): 8-float
// vectors in GCC's vector extensions (one AVX register, or two SSE ones in the baseline
// clone of a BIASLAB_TARGET_CLONES function) and a vectorised exp. Everything here is
// always inlined, so it is compiled for the instruction set of the function it lands in.
#include <cstdint>
#include <cstring>

#define BIASLAB_INLINE inline __attribute__((always_inline))

namespace biaslab::vec {

typedef float v8 __attribute__((vector_size(32)));    // 8 floats
typedef int32_t vi8 __attribute__((vector_size(32)));  // 8 int32, for exp's exponent bits

BIASLAB_INLINE v8 load8(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

BIASLAB_INLINE void store8(float* p, v8 v) { std::memcpy(p, &v, sizeof v); }

BIASLAB_INLINE v8 splat8(float f) { return v8{} + f; }

// exp(t) for t <= 0 (-inf gives 0): Cephes' single-precision exp (range reduction by
// ln 2 in two parts, degree-6 polynomial, 2^k from the exponent bits, k rounded with the
// 1.5 * 2^23 trick), within 2 ulp of std::exp; 0 below -87.
BIASLAB_INLINE v8 exp_nonpositive8(v8 t) {
  const v8 zero = {};
  const v8 c = t < -87.0f ? zero - 87.0f : t;
  const v8 k = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  v8 r = c - k * 0.693359375f;
  r = r + k * 2.12194440e-4f;
  const v8 r2 = r * r;
  v8 p = zero + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  const vi8 bits = (__builtin_convertvector(k, vi8) + 127) << 23;
  const v8 e = p * (v8)bits;  // the bits as floats: 2^k
  return t < -87.0f ? zero : e;
}

}  // namespace biaslab::vec
