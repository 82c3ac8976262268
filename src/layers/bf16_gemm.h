#pragma once
// Small bf16 matrix products with fp32 accumulation, for the fused CPU kernels' bf16 paths
// (src/layers/attention_kernel.cpp). C (fp32) = alpha A B with A (m x k) and B (k x n)
// in bf16, in the layout AVX512-BF16's `vdpbf16ps` reads: pairs of consecutive k.
//   A, packed: m rows of `even(k)` bf16, zero-padded;
//   B, packed: even(k) / 2 groups, each `pad16(n)` pairs (B[2p][j], B[2p+1][j]),
//              zero-padded in k and n; read as A, the same buffer is x^T (Layout::Columns).
// The product runs on `vdpbf16ps` where the CPU has AVX512-BF16 (chosen at run time from
// core/cpu_info, so one binary runs on every x86-64 CPU) and on a portable loop that
// computes the same sums in fp32 otherwise. bf16 values are their bits (uint16_t);
// rounding from fp32 is to nearest even, as LibTorch's casts (the vector path's
// instructions also read and write denormals as zero; the portable path keeps them).
#include <cstdint>

namespace biaslab::bf16_gemm {

inline int64_t even(int64_t k) { return (k + 1) / 2 * 2; }
inline int64_t pad16(int64_t n) { return (n + 15) / 16 * 16; }

/// Elements of a packed A (m x k) and of a packed B (k x n).
inline int64_t a_size(int64_t m, int64_t k) { return m * even(k); }
inline int64_t b_size(int64_t k, int64_t n) { return even(k) / 2 * pad16(n) * 2; }

/// A from bf16 rows: a (m x k) with rows `ld` apart.
void pack_a(const uint16_t* x, int64_t m, int64_t k, int64_t ld, uint16_t* a);
/// A from fp32 rows, rounded.
void pack_a(const float* x, int64_t m, int64_t k, int64_t ld, uint16_t* a);
/// B = x^T for bf16 rows x (n x k, rows ld apart): B[kk][j] = x[j][kk].
void pack_b_transposed(const uint16_t* x, int64_t k, int64_t n, int64_t ld, uint16_t* b);
/// B = x for bf16 rows x (k x n, rows ld apart); from fp32 rows, rounded.
void pack_b(const uint16_t* x, int64_t k, int64_t n, int64_t ld, uint16_t* b);
void pack_b(const float* x, int64_t k, int64_t n, int64_t ld, uint16_t* b);

/// Where gemm finds A: rows packed by pack_a, or the columns of a B packed by pack_b from
/// x (then A = x^T: a transposed operand without a transposing copy).
enum class Layout { Rows, Columns };

/// c (m x n, rows ldc apart) = alpha A B, from packed A and B; on the vector path where
/// vector_path() says so, else the portable one.
void gemm(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, Layout layout, const uint16_t* b, float* c,
          int64_t ldc);
/// The same, rounded to bf16 (nearest even) into c.
void gemm(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, Layout layout, const uint16_t* b,
          uint16_t* c, int64_t ldc);
/// The portable product alone (any CPU).
void gemm_portable(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, Layout layout,
                   const uint16_t* b, float* c, int64_t ldc);

/// Whether this build has the AVX512-BF16 product and this CPU runs it (avx512f, avx512bw,
/// avx512vl, avx512_bf16).
bool vector_available();
/// Whether gemm (and the kernels' bf16 paths) take the vector path: vector_available()
/// unless turned off by set_vector_path(false) (tests compare the two paths).
bool vector_path();
void set_vector_path(bool on);

}  // namespace biaslab::bf16_gemm
