#include "layers/bf16_gemm.h"

#include <atomic>
#include <type_traits>
#include <utility>
#include <cstring>
#include <vector>

#include "core/cpu_info.h"
#include "layers/kernel_rows.h"

// The vector product is compiled for AVX-512 with BF16 through a target attribute (the
// rest of the file, and of the binary, stays baseline x86-64) and only called after
// vector_available() has checked the CPU.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BIASLAB_BF16_VECTOR 1
#include <immintrin.h>
#define BIASLAB_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

namespace biaslab::bf16_gemm {
namespace {

// fp32 -> bf16, nearest even; a NaN stays a quiet NaN (as kernel_rows::float_to_bf16).
inline uint16_t round_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float widen(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Strides of A's pairs (row, group) in uint16 units: rows packed by pack_a, or the columns
// of a B packed by pack_b (A = x^T).
std::pair<int64_t, int64_t> layout_strides(int64_t m, int64_t k, Layout layout) {
  if (layout == Layout::Rows) return {even(k), 2};
  return {2, 2 * pad16(m)};
}

#ifdef BIASLAB_BF16_VECTOR
// C[MR rows][up to 16 W columns] = alpha A B for one block: the MR x W accumulators stay
// in registers; each step broadcasts a pair of A's row and multiplies it with W groups
// of 16 pairs of B (vdpbf16ps: 16 lanes, two products each, summed in fp32).
BIASLAB_BF16_TARGET inline void store(float* c, __m512 v, int64_t left) {
  if (left >= 16)
    _mm512_storeu_ps(c, v);
  else
    _mm512_mask_storeu_ps(c, __mmask16((1u << left) - 1u), v);
}

BIASLAB_BF16_TARGET inline void store(uint16_t* c, __m512 v, int64_t left) {  // rounded to nearest even
  const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
  if (left >= 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), h);
  else
    _mm256_mask_storeu_epi16(c, __mmask16((1u << left) - 1u), h);
}

// A's pair (r, p) is at a + r rs + p gs (layout_strides).
template <int MR, int W, typename Out>
BIASLAB_BF16_TARGET inline void block(int64_t groups, float alpha, const uint16_t* a, int64_t rs, int64_t gs,
                                      const uint16_t* b, int64_t ldb, Out* c, int64_t ldc, int64_t cols) {
  __m512 acc[MR][W];
  for (int r = 0; r < MR; ++r)
    for (int w = 0; w < W; ++w) acc[r][w] = _mm512_setzero_ps();
  for (int64_t p = 0; p < groups; ++p) {
    __m512bh bv[W];
    for (int w = 0; w < W; ++w) bv[w] = (__m512bh)_mm512_loadu_si512(b + p * ldb + 32 * w);
    for (int r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * rs + p * gs, sizeof pair);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      for (int w = 0; w < W; ++w) acc[r][w] = _mm512_dpbf16_ps(acc[r][w], av, bv[w]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
  for (int r = 0; r < MR; ++r)
    for (int w = 0; w < W; ++w)
      if (cols - 16 * w > 0) store(c + r * ldc + 16 * w, _mm512_mul_ps(acc[r][w], va), cols - 16 * w);
}

template <int MR, typename Out>
BIASLAB_BF16_TARGET inline void row_block(int64_t n, int64_t groups, float alpha, const uint16_t* a, int64_t rs,
                                          int64_t gs, const uint16_t* b, int64_t ldb, Out* c, int64_t ldc) {
  int64_t j = 0;
  for (; j + 16 < n; j += 32) block<MR, 2>(groups, alpha, a, rs, gs, b + 2 * j, ldb, c + j, ldc, n - j);
  if (j < n) block<MR, 1>(groups, alpha, a, rs, gs, b + 2 * j, ldb, c + j, ldc, n - j);
}

template <typename Out>
BIASLAB_BF16_TARGET void gemm_vector(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, Layout layout,
                                     const uint16_t* b, Out* c, int64_t ldc) {
  const auto [rs, gs] = layout_strides(m, k, layout);
  const int64_t groups = even(k) / 2, ldb = 2 * pad16(n);
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) row_block<4>(n, groups, alpha, a + i * rs, rs, gs, b, ldb, c + i * ldc, ldc);
  switch (m - i) {
    case 3: row_block<3>(n, groups, alpha, a + i * rs, rs, gs, b, ldb, c + i * ldc, ldc); break;
    case 2: row_block<2>(n, groups, alpha, a + i * rs, rs, gs, b, ldb, c + i * ldc, ldc); break;
    case 1: row_block<1>(n, groups, alpha, a + i * rs, rs, gs, b, ldb, c + i * ldc, ldc); break;
    default: break;
  }
}

// y = x rounded to bf16 (nearest even), 16 at a time.
BIASLAB_BF16_TARGET void round_vector(const float* x, uint16_t* y, int64_t c) {
  int64_t i = 0;
  for (; i + 16 <= c; i += 16) store(y + i, _mm512_loadu_ps(x + i), 16);
  if (i < c) {
    const __mmask16 mask = __mmask16((1u << (c - i)) - 1u);
    store(y + i, _mm512_maskz_loadu_ps(mask, x + i), c - i);
  }
}

// One group of a B packed from fp32 rows x0 and x1 (null: padding), n columns, rounded.
BIASLAB_BF16_TARGET void interleave_vector(const float* x0, const float* x1, int64_t n, uint16_t* bp) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 mask = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1u);
    const __m512i lo = _mm512_maskz_cvtepu16_epi32(__mmask16(0xffff), (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x0 + j)));
    __m512i words = lo;
    if (x1) {
      const __m512i hi = _mm512_maskz_cvtepu16_epi32(__mmask16(0xffff), (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x1 + j)));
      words = _mm512_or_si512(lo, _mm512_maskz_slli_epi32(__mmask16(0xffff), hi, 16));
    }
    _mm512_mask_storeu_epi32(bp + 2 * j, mask, words);
  }
}
#endif

bool detect() {
#ifdef BIASLAB_BF16_VECTOR
  const CpuInfo& cpu = cpu_info();
  return cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512vl") && cpu.has("avx512_bf16");
#else
  return false;
#endif
}

std::atomic<bool> g_vector_on{true};


}  // namespace

void pack_a(const uint16_t* x, int64_t m, int64_t k, int64_t ld, uint16_t* a) {
  const int64_t lda = even(k);
  for (int64_t i = 0; i < m; ++i) {
    std::memcpy(a + i * lda, x + i * ld, sizeof(uint16_t) * size_t(k));
    if (lda != k) a[i * lda + k] = 0;
  }
}

void pack_a(const float* x, int64_t m, int64_t k, int64_t ld, uint16_t* a) {
  const int64_t lda = even(k);
  for (int64_t i = 0; i < m; ++i) {
    uint16_t* ai = a + i * lda;
#ifdef BIASLAB_BF16_VECTOR
    if (vector_path()) {
      round_vector(x + i * ld, ai, k);
    } else {
      kernel_rows::float_to_bf16(x + i * ld, ai, k);
    }
#else
    kernel_rows::float_to_bf16(x + i * ld, ai, k);
#endif
    if (lda != k) ai[k] = 0;
  }
}

void pack_b_transposed(const uint16_t* x, int64_t k, int64_t n, int64_t ld, uint16_t* b) {
  const int64_t groups = even(k) / 2, full = k / 2, ldb = 2 * pad16(n);
  // Column j of B is row j of x: its pairs are 32-bit words of that row.
  for (int64_t p = 0; p < groups; ++p) {
    uint16_t* bp = b + p * ldb;
    if (p < full) {
      for (int64_t j = 0; j < n; ++j) std::memcpy(bp + 2 * j, x + j * ld + 2 * p, 2 * sizeof(uint16_t));
    } else {  // odd k: the last group's second half is padding
      for (int64_t j = 0; j < n; ++j) {
        bp[2 * j] = x[j * ld + 2 * p];
        bp[2 * j + 1] = 0;
      }
    }
    std::memset(bp + 2 * n, 0, sizeof(uint16_t) * size_t(ldb - 2 * n));
  }
}

namespace {

inline uint16_t bits_of(uint16_t h) { return h; }
inline uint16_t bits_of(float f) { return round_bf16(f); }

// B from rows of bf16 (copied) or fp32 (rounded; on the vector path, 16 at a time).
template <typename T>
void pack_b_rows(const T* x, int64_t k, int64_t n, int64_t ld, uint16_t* b) {
  const int64_t groups = even(k) / 2, ldb = 2 * pad16(n);
  for (int64_t p = 0; p < groups; ++p) {
    const T* x0 = x + 2 * p * ld;
    const T* x1 = 2 * p + 1 < k ? x0 + ld : nullptr;  // odd k: padding
    uint16_t* bp = b + p * ldb;
    bool done = false;
#ifdef BIASLAB_BF16_VECTOR
    if constexpr (std::is_same_v<T, float>) {
      if (vector_path()) {
        interleave_vector(x0, x1, n, bp);
        done = true;
      }
    }
#endif
    if (!done) {
      for (int64_t j = 0; j < n; ++j) {
        bp[2 * j] = bits_of(x0[j]);
        bp[2 * j + 1] = x1 ? bits_of(x1[j]) : uint16_t(0);
      }
    }
    std::memset(bp + 2 * n, 0, sizeof(uint16_t) * size_t(ldb - 2 * n));
  }
}

}  // namespace

void pack_b(const uint16_t* x, int64_t k, int64_t n, int64_t ld, uint16_t* b) { pack_b_rows(x, k, n, ld, b); }

void pack_b(const float* x, int64_t k, int64_t n, int64_t ld, uint16_t* b) { pack_b_rows(x, k, n, ld, b); }

void gemm_portable(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, Layout layout,
                   const uint16_t* b, float* c, int64_t ldc) {
  const auto [rs, gs] = layout_strides(m, k, layout);
  const int64_t groups = even(k) / 2, ldb = 2 * pad16(n);
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) ci[j] = 0.f;
    for (int64_t p = 0; p < groups; ++p) {
      const uint16_t* pair = a + i * rs + p * gs;
      const float a0 = widen(pair[0]), a1 = widen(pair[1]);
      const uint16_t* bp = b + p * ldb;
      for (int64_t j = 0; j < n; ++j) ci[j] += a0 * widen(bp[2 * j]) + a1 * widen(bp[2 * j + 1]);
    }
    for (int64_t j = 0; j < n; ++j) ci[j] *= alpha;
  }
}

void gemm(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, Layout layout, const uint16_t* b,
          float* c, int64_t ldc) {
#ifdef BIASLAB_BF16_VECTOR
  if (vector_path()) return gemm_vector(m, n, k, alpha, a, layout, b, c, ldc);
#endif
  gemm_portable(m, n, k, alpha, a, layout, b, c, ldc);
}

void gemm(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, Layout layout, const uint16_t* b,
          uint16_t* c, int64_t ldc) {
#ifdef BIASLAB_BF16_VECTOR
  if (vector_path()) return gemm_vector(m, n, k, alpha, a, layout, b, c, ldc);
#endif
  std::vector<float> row(static_cast<size_t>(m * n));
  gemm_portable(m, n, k, alpha, a, layout, b, row.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = round_bf16(row[i * n + j]);
}

bool vector_available() {
  static const bool available = detect();
  return available;
}

bool vector_path() { return vector_available() && g_vector_on.load(std::memory_order_relaxed); }

void set_vector_path(bool on) { g_vector_on.store(on, std::memory_order_relaxed); }

}  // namespace biaslab::bf16_gemm
