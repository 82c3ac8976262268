#include "layers/attention_kernel.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/kernel_log.h"
#include "layers/bf16_gemm.h"
#include "layers/kernel_rows.h"
#include "layers/kernel_target.h"
#include "layers/vec_math.h"

// The tile functions are BIASLAB_TARGET_CLONES (kernel_target.h: one copy for x86-64-v3,
// one for the baseline); their inner loops are 8-float GCC vector types (vec_math.h: the
// register-blocked micro-kernel, the vectorised exp) and `omp simd` loops.

namespace biaslab {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

BIASLAB_INLINE float dot(const float* a, const float* b, int64_t d) {
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < d; ++i) acc += a[i] * b[i];
  return acc;
}

using vec::load8;
using vec::store8;
using vec::v8;

// x[j] <- exp(x[j] - shift) for j < n; shift is the row maximum or its log-sum-exp, so
// every argument is <= 0 (and -inf where masked, giving 0): eight at a time
// (vec::exp_nonpositive8), std::exp for the last n % 8.
BIASLAB_INLINE void exp_shifted(float* x, int64_t n, float shift) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) store8(x + j, vec::exp_nonpositive8(load8(x + j) - shift));
  for (; j < n; ++j) x[j] = std::exp(x[j] - shift);
}

// The shapes and pointers of one (batch, head) tile, of float or bf16 (its bits) q, k, v.
// Rows of q, k, v (and of their gradients) are `ld` elements apart, rows of the output
// `ldo` apart; bias, mask and dbias are N x N row-major or null.
template <typename T>
struct TileOf {
  int64_t n, d, ld, ldo;
  float scale;
  const T *q, *k, *v;
  const float* bias;
  const bool* mask;
};
using Tile = TileOf<float>;

// C[MR rows][W vectors of 8 columns] = alpha A B over k < kk, with the MR x W block of C
// kept in registers (the micro-kernel of a matrix product); B rows are ldb apart.
template <int MR, int W>
BIASLAB_INLINE void block(int64_t kk, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                          float* c, int64_t ldc) {
  v8 acc[MR][W] = {};
  for (int64_t k = 0; k < kk; ++k) {
    v8 bv[W];
    for (int w = 0; w < W; ++w) bv[w] = load8(b + k * ldb + 8 * w);
    for (int r = 0; r < MR; ++r) {
      const float ar = a[r * lda + k];
      for (int w = 0; w < W; ++w) acc[r][w] += ar * bv[w];
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int w = 0; w < W; ++w) store8(c + r * ldc + 8 * w, alpha * acc[r][w]);
}

// Columns [j, n) of MR rows, fewer than 8: one dot product each.
template <int MR>
BIASLAB_INLINE void tail(int64_t j, int64_t n, int64_t kk, float alpha, const float* a, int64_t lda, const float* b,
                         int64_t ldb, float* c, int64_t ldc) {
  for (int r = 0; r < MR; ++r)
    for (int64_t jj = j; jj < n; ++jj) {
      float acc = 0.f;
      for (int64_t k = 0; k < kk; ++k) acc += a[r * lda + k] * b[k * ldb + jj];
      c[r * ldc + jj] = alpha * acc;
    }
}

template <int MR>
BIASLAB_INLINE void row_block(int64_t n, int64_t kk, float alpha, const float* a, int64_t lda, const float* b,
                              int64_t ldb, float* c, int64_t ldc) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) block<MR, 2>(kk, alpha, a, lda, b + j, ldb, c + j, ldc);
  for (; j + 8 <= n; j += 8) block<MR, 1>(kk, alpha, a, lda, b + j, ldb, c + j, ldc);
  tail<MR>(j, n, kk, alpha, a, lda, b, ldb, c, ldc);
}

// C (m x n, ldc) = alpha A (m x kk, lda) B (kk x n, ldb), all row-major.
BIASLAB_INLINE void gemm(int64_t m, int64_t n, int64_t kk, float alpha, const float* a, int64_t lda, const float* b,
                         int64_t ldb, float* c, int64_t ldc) {
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) row_block<4>(n, kk, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
  switch (m - i) {
    case 3: row_block<3>(n, kk, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc); break;
    case 2: row_block<2>(n, kk, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc); break;
    case 1: row_block<1>(n, kk, alpha, a + i * lda, lda, b, ldb, c + i * ldc, ldc); break;
    default: break;
  }
}

// dst (cols x rows, row-major) = src (rows x cols, rows ld apart) transposed; written
// in order (strided reads are cheaper than strided writes).
BIASLAB_INLINE void transpose(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < rows; ++r) dst[c * rows + r] = src[r * ld + c];
}

// s (n x n, scores) <- the tile's probabilities: + bias, -inf where masked, then per row
// exp(. - shift_i) with shift_i the row's maximum (forward: lse_i is then written) or the
// saved log-sum-exp (backward: rows normalised already).
BIASLAB_INLINE void normalise(int64_t n, const float* bias, const bool* mask, float* s, float* lse, bool forward) {
  for (int64_t i = 0; i < n; ++i) {
    float* si = s + i * n;
    if (bias) {
      const float* b = bias + i * n;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) si[j] += b[j];
    }
    if (mask) {
      const bool* m = mask + i * n;
      for (int64_t j = 0; j < n; ++j)
        if (!m[j]) si[j] = kNegInf;
    }
    float shift = lse[i];
    if (forward) {
      shift = kNegInf;
#pragma omp simd reduction(max : shift)
      for (int64_t j = 0; j < n; ++j) shift = si[j] > shift ? si[j] : shift;
    }
    if (shift == kNegInf) {  // nothing to attend to: zero output, no gradient
      std::memset(si, 0, sizeof(float) * size_t(n));
      lse[i] = kNegInf;
      continue;
    }
    exp_shifted(si, n, shift);
    if (forward) {
      float l = 0.f;
#pragma omp simd reduction(+ : l)
      for (int64_t j = 0; j < n; ++j) l += si[j];
      const float inv = 1.0f / l;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) si[j] *= inv;
      lse[i] = shift + std::log(l);
    }
  }
}

// s (n x n) <- the tile's probabilities from scale q k^T (normalise). kt: k^T (d x n).
BIASLAB_INLINE void probabilities(const Tile& t, const float* kt, float* s, float* lse, bool forward) {
  gemm(t.n, t.n, t.d, t.scale, t.q, t.ld, kt, t.n, s, t.n);
  normalise(t.n, t.bias, t.mask, s, lse, forward);
}

// out rows (n x d, ldo apart) and the rows' log-sum-exp (n); scratch: d n + n n floats.
BIASLAB_TARGET_CLONES void forward_tile(const Tile& t, float* out, float* lse, float* scratch) {
  float* kt = scratch;
  float* p = kt + t.d * t.n;
  transpose(t.k, t.n, t.d, t.ld, kt);
  probabilities(t, kt, p, lse, /*forward=*/true);
  gemm(t.n, t.d, t.n, 1.0f, p, t.n, t.v, t.ld, out, t.ldo);  // P V
}

// Gradients of one tile: dq, dk, dv (rows ld apart, overwritten), and ds (n x n) into
// dbias when not null. scratch: 2 d n + 3 n n floats.
BIASLAB_TARGET_CLONES void backward_tile(const Tile& t, const float* out, const float* dout, const float* lse,
                                         float* dq, float* dk, float* dv, float* dbias, float* scratch) {
  const int64_t n = t.n, d = t.d;
  float* kt = scratch;
  float* vt = kt + d * n;
  float* p = vt + d * n;
  float* ds = p + n * n;
  float* tr = ds + n * n;
  transpose(t.k, n, d, t.ld, kt);
  transpose(t.v, n, d, t.ld, vt);
  std::vector<float> lse_row(lse, lse + n);  // probabilities() may write -inf rows
  probabilities(t, kt, p, lse_row.data(), /*forward=*/false);
  gemm(n, n, d, 1.0f, dout, t.ldo, vt, n, ds, n);  // dP = dO V^T
  for (int64_t i = 0; i < n; ++i) {
    const float di = dot(dout + i * t.ldo, out + i * t.ldo, d);  // sum_j p_ij dP_ij
    float* dsi = ds + i * n;
    const float* pi = p + i * n;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dsi[j] = pi[j] * (dsi[j] - di);  // softmax backward
  }
  if (dbias) std::memcpy(dbias, ds, sizeof(float) * size_t(n * n));
  gemm(n, d, n, t.scale, ds, n, t.k, t.ld, dq, t.ld);  // dQ = scale dS K
  transpose(ds, n, n, n, tr);
  gemm(n, d, n, t.scale, tr, n, t.q, t.ld, dk, t.ld);  // dK = scale dS^T Q
  transpose(p, n, n, n, tr);
  gemm(n, d, n, 1.0f, tr, n, dout, t.ldo, dv, t.ld);  // dV = P^T dO
}

// --- bf16 tiles: bf16 in and out, fp32 scores, softmax and accumulation -------------
// q, k, v, out and dout rows are bf16 (their bits); only the tile's own rows are ever
// converted or packed, in per-thread scratch, never a whole tensor.
using TileBf16 = TileOf<uint16_t>;

// Rows (rows x c, ld apart) of bf16 <-> fp32 (packed, c apart).
void widen_rows(const uint16_t* x, int64_t rows, int64_t c, int64_t ld, float* dst) {
  for (int64_t i = 0; i < rows; ++i) kernel_rows::bf16_to_float(x + i * ld, dst + i * c, c);
}
void round_rows(const float* x, int64_t rows, int64_t c, uint16_t* dst, int64_t ld) {
  for (int64_t i = 0; i < rows; ++i) kernel_rows::float_to_bf16(x + i * c, dst + i * ld, c);
}

// Scratch of one thread for the bf16 tiles, sized for the larger of forward and backward.
struct Bf16Scratch {
  std::vector<float> f;
  std::vector<uint16_t> h;
  int64_t a_slot;
  Bf16Scratch(int64_t n, int64_t d) {
    using namespace bf16_gemm;
    // portable: q k v, out, dout, dq dk dv as fp32 + the fp32 tile's 2 d n + 3 n n;
    // vector: the scores and their gradients (n n each).
    f.resize(size_t(std::max(3 * n * d + 2 * n * d + 3 * n * d + 2 * d * n + 3 * n * n, 2 * n * n)));
    // bf16: two A slots (a packed A, or a packed B read as A: dS^T, P^T), one B slot.
    a_slot = std::max(a_size(n, std::max(n, d)), b_size(n, n));
    h.resize(size_t(2 * a_slot + std::max(b_size(d, n), b_size(n, d))));
  }
};

// Portable: the tile's rows widened to fp32, then the fp32 tile; for CPUs without
// AVX512-BF16 (and to check the vector path against).
void forward_tile_bf16_portable(const TileBf16& t, uint16_t* out, float* lse, Bf16Scratch& w) {
  const int64_t n = t.n, d = t.d;
  float* qkv = w.f.data();  // n x 3d: [q | k | v]
  float* o = qkv + 3 * n * d;
  float* scratch = o + n * d;
  widen_rows(t.q, n, d, t.ld, qkv);
  widen_rows(t.k, n, d, t.ld, qkv + n * d);
  widen_rows(t.v, n, d, t.ld, qkv + 2 * n * d);
  const Tile ft{n, d, d, d, t.scale, qkv, qkv + n * d, qkv + 2 * n * d, t.bias, t.mask};
  forward_tile(ft, o, lse, scratch);
  round_rows(o, n, d, out, t.ldo);
}

void backward_tile_bf16_portable(const TileBf16& t, const uint16_t* out, const uint16_t* dout, const float* lse,
                                 uint16_t* dq, uint16_t* dk, uint16_t* dv, float* dbias, Bf16Scratch& w) {
  const int64_t n = t.n, d = t.d;
  float* qkv = w.f.data();
  float* o = qkv + 3 * n * d;
  float* dO = o + n * d;
  float* g = dO + n * d;  // dq, dk, dv: n x 3d
  float* scratch = g + 3 * n * d;
  widen_rows(t.q, n, d, t.ld, qkv);
  widen_rows(t.k, n, d, t.ld, qkv + n * d);
  widen_rows(t.v, n, d, t.ld, qkv + 2 * n * d);
  widen_rows(out, n, d, t.ldo, o);
  widen_rows(dout, n, d, t.ldo, dO);
  const Tile ft{n, d, d, d, t.scale, qkv, qkv + n * d, qkv + 2 * n * d, t.bias, t.mask};
  backward_tile(ft, o, dO, lse, g, g + n * d, g + 2 * n * d, dbias, scratch);
  round_rows(g, n, d, dq, t.ld);
  round_rows(g + n * d, n, d, dk, t.ld);
  round_rows(g + 2 * n * d, n, d, dv, t.ld);
}

// Vector: the products (two forward, five backward) on bf16_gemm (vdpbf16ps, fp32 sums),
// the probabilities and the score gradients rounded to bf16 as their operands (as flash
// attention does), the softmax in fp32.
BIASLAB_TARGET_CLONES void forward_tile_bf16(const TileBf16& t, uint16_t* out, float* lse, Bf16Scratch& w) {
  namespace bg = bf16_gemm;
  const int64_t n = t.n, d = t.d;
  float* s = w.f.data();
  uint16_t* a = w.h.data();
  uint16_t* b = a + 2 * w.a_slot;
  bg::pack_a(t.q, n, d, t.ld, a);
  bg::pack_b_transposed(t.k, d, n, t.ld, b);
  bg::gemm(n, n, d, t.scale, a, bg::Layout::Rows, b, s, n);  // S = scale Q K^T
  normalise(n, t.bias, t.mask, s, lse, /*forward=*/true);
  bg::pack_a(s, n, n, n, a);
  bg::pack_b(t.v, n, d, t.ld, b);
  bg::gemm(n, d, n, 1.0f, a, bg::Layout::Rows, b, out, t.ldo);  // O = P V
}

BIASLAB_TARGET_CLONES void backward_tile_bf16(const TileBf16& t, const uint16_t* out, const uint16_t* dout,
                                              const float* lse, uint16_t* dq, uint16_t* dk, uint16_t* dv,
                                              float* dbias, Bf16Scratch& w) {
  namespace bg = bf16_gemm;
  (void)out;  // sum_j p_ij dP_ij stands for dO_i . O_i
  const int64_t n = t.n, d = t.d;
  float* p = w.f.data();
  float* ds = p + n * n;
  uint16_t* a = w.h.data();
  uint16_t* a2 = a + w.a_slot;
  uint16_t* b = a2 + w.a_slot;
  std::vector<float> lse_row(lse, lse + n);  // normalise() may write -inf rows
  bg::pack_a(t.q, n, d, t.ld, a);
  bg::pack_b_transposed(t.k, d, n, t.ld, b);
  bg::gemm(n, n, d, t.scale, a, bg::Layout::Rows, b, p, n);
  normalise(n, t.bias, t.mask, p, lse_row.data(), /*forward=*/false);
  bg::pack_a(dout, n, d, t.ldo, a2);
  bg::pack_b_transposed(t.v, d, n, t.ld, b);
  bg::gemm(n, n, d, 1.0f, a2, bg::Layout::Rows, b, ds, n);  // dP = dO V^T
  for (int64_t i = 0; i < n; ++i) {
    float* dsi = ds + i * n;
    const float* pi = p + i * n;
    const float di = dot(pi, dsi, n);  // sum_j p_ij dP_ij: dO_i . O_i up to P's and O's rounding
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dsi[j] = pi[j] * (dsi[j] - di);  // softmax backward
  }
  if (dbias) std::memcpy(dbias, ds, sizeof(float) * size_t(n * n));
  bg::pack_a(ds, n, n, n, a);
  bg::pack_b(t.k, n, d, t.ld, b);
  bg::gemm(n, d, n, t.scale, a, bg::Layout::Rows, b, dq, t.ld);  // dQ = scale dS K
  bg::pack_b(ds, n, n, n, a);  // read as dS^T
  bg::pack_b(t.q, n, d, t.ld, b);
  bg::gemm(n, d, n, t.scale, a, bg::Layout::Columns, b, dk, t.ld);  // dK = scale dS^T Q
  bg::pack_b(p, n, n, n, a);  // read as P^T
  bg::pack_b(dout, n, d, t.ldo, b);
  bg::gemm(n, d, n, 1.0f, a, bg::Layout::Columns, b, dv, t.ld);  // dV = P^T dO
}

struct Shape {
  int64_t b, n, c, heads, d;
};

Shape shape_of(const at::Tensor& qkv, int64_t heads) {
  TORCH_CHECK(qkv.dim() == 3 && qkv.size(2) % 3 == 0, "attention_cpu: qkv must be (B, N, 3C), got ",
              qkv.sizes());
  const int64_t c = qkv.size(2) / 3;
  TORCH_CHECK(heads > 0 && c % heads == 0, "attention_cpu: width ", c, " is not divisible by ", heads, " heads");
  return {qkv.size(0), qkv.size(1), c, heads, c / heads};
}

// The tile of (batch, head) bh in a qkv of element type T (float, or bf16 bits).
template <typename T>
TileOf<T> tile_of(const Shape& s, const T* qkv, const float* bias, const bool* mask, float scale, int64_t bh) {
  const int64_t b = bh / s.heads, h = bh % s.heads;
  const T* base = qkv + b * s.n * 3 * s.c + h * s.d;
  return {s.n, s.d, 3 * s.c, s.c, scale, base, base + s.c, base + 2 * s.c,
          bias ? bias + h * s.n * s.n : nullptr, mask};
}

const uint16_t* bf16_bits(const at::Tensor& t) {
  return reinterpret_cast<const uint16_t*>(t.data_ptr<at::BFloat16>());
}
uint16_t* bf16_bits(at::Tensor& t) { return reinterpret_cast<uint16_t*>(t.data_ptr<at::BFloat16>()); }

// Offsets of tile bh's first element in qkv (and dqkv) and in out (and dout).
int64_t qkv_offset(const Shape& s, int64_t bh) { return (bh / s.heads) * s.n * 3 * s.c + (bh % s.heads) * s.d; }
int64_t out_offset(const Shape& s, int64_t bh) { return (bh / s.heads) * s.n * s.c + (bh % s.heads) * s.d; }

// fn(bh, scratch) for every (batch, head) tile, spread over the intra-op threads, each
// thread with its own scratch from make_scratch().
template <typename MakeScratch, typename Fn>
void for_each_tile(const Shape& s, MakeScratch make_scratch, Fn fn) {
  at::parallel_for(0, s.b * s.heads, 1, [&](int64_t begin, int64_t end) {
    auto scratch = make_scratch();
    for (int64_t bh = begin; bh < end; ++bh) fn(bh, scratch);
  });
}

void forward_all(const Shape& s, const at::Tensor& qkv, const float* bp, const bool* mp, float scale,
                 at::Tensor& out, float* lp) {
  if (qkv.scalar_type() == at::kFloat) {
    const float* qp = qkv.data_ptr<float>();
    float* op = out.data_ptr<float>();
    for_each_tile(
        s, [&] { return std::vector<float>(size_t(s.d * s.n + s.n * s.n)); },
        [&](int64_t bh, std::vector<float>& scratch) {
          forward_tile(tile_of<float>(s, qp, bp, mp, scale, bh), op + out_offset(s, bh), lp + bh * s.n,
                       scratch.data());
        });
    return;
  }
  const uint16_t* qp = bf16_bits(qkv);
  uint16_t* op = bf16_bits(out);
  auto* tile_forward = bf16_gemm::vector_path() ? forward_tile_bf16 : forward_tile_bf16_portable;
  for_each_tile(
      s, [&] { return Bf16Scratch(s.n, s.d); },
      [&](int64_t bh, Bf16Scratch& scratch) {
        tile_forward(tile_of<uint16_t>(s, qp, bp, mp, scale, bh), op + out_offset(s, bh), lp + bh * s.n,
                     scratch);
      });
}

void backward_all(const Shape& s, const at::Tensor& qkv, const float* bp, const bool* mp, float scale,
                  const at::Tensor& out, const at::Tensor& dout, const float* lp, at::Tensor& dqkv, float* dsp) {
  const int64_t nn = s.n * s.n;
  if (qkv.scalar_type() == at::kFloat) {
    const float* qp = qkv.data_ptr<float>();
    const float* op = out.data_ptr<float>();
    const float* dop = dout.data_ptr<float>();
    float* dp = dqkv.data_ptr<float>();
    for_each_tile(
        s, [&] { return std::vector<float>(size_t(2 * s.d * s.n + 3 * nn)); },
        [&](int64_t bh, std::vector<float>& scratch) {
          float* dq = dp + qkv_offset(s, bh);
          backward_tile(tile_of<float>(s, qp, bp, mp, scale, bh), op + out_offset(s, bh),
                        dop + out_offset(s, bh), lp + bh * s.n, dq, dq + s.c, dq + 2 * s.c,
                        dsp ? dsp + bh * nn : nullptr, scratch.data());
        });
    return;
  }
  const uint16_t* qp = bf16_bits(qkv);
  const uint16_t* op = bf16_bits(out);
  const uint16_t* dop = bf16_bits(dout);
  uint16_t* dp = bf16_bits(dqkv);
  auto* tile_backward = bf16_gemm::vector_path() ? backward_tile_bf16 : backward_tile_bf16_portable;
  for_each_tile(
      s, [&] { return Bf16Scratch(s.n, s.d); },
      [&](int64_t bh, Bf16Scratch& scratch) {
        uint16_t* dq = dp + qkv_offset(s, bh);
        tile_backward(tile_of<uint16_t>(s, qp, bp, mp, scale, bh), op + out_offset(s, bh),
                      dop + out_offset(s, bh), lp + bh * s.n, dq, dq + s.c, dq + 2 * s.c,
                      dsp ? dsp + bh * nn : nullptr, scratch);
      });
}

class AttentionFunction : public torch::autograd::Function<AttentionFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& qkv_in, const at::Tensor& bias_in,
                            const at::Tensor& mask_in, int64_t heads, double scale) {
    RECORD_FUNCTION("biaslab::attention_cpu", std::vector<c10::IValue>());  // named in profiles (bench --trace)
    kernel_log::note("attention", qkv_in.scalar_type() == at::kFloat ? "fp32"
                                  : bf16_gemm::vector_path()          ? "bf16, AVX512-BF16"
                                                                      : "bf16, widened to fp32 per tile");
    // Absent bias and mask arrive as empty tensors: 1.13's Function::apply cannot take
    // undefined ones.
    const at::Tensor qkv = qkv_in.contiguous();
    const Shape s = shape_of(qkv, heads);
    const at::Tensor bias = bias_in.numel() > 0 ? bias_in.to(at::kFloat).contiguous() : at::Tensor();
    const at::Tensor mask = mask_in.numel() > 0 ? mask_in.to(at::kBool).contiguous() : at::Tensor();
    if (bias.defined())
      TORCH_CHECK(bias.dim() == 3 && bias.size(0) == heads && bias.size(1) == s.n && bias.size(2) == s.n,
                  "attention_cpu: bias must be (heads, N, N) = (", heads, ", ", s.n, ", ", s.n, "), got ",
                  bias.sizes());
    if (mask.defined())
      TORCH_CHECK(mask.dim() == 2 && mask.size(0) == s.n && mask.size(1) == s.n,
                  "attention_cpu: mask must be (N, N) = (", s.n, ", ", s.n, "), got ", mask.sizes());
    auto out = at::empty({s.b, s.n, s.c}, qkv.options());
    auto lse = at::empty({s.b, s.heads, s.n}, qkv.options().dtype(at::kFloat));
    forward_all(s, qkv, bias.defined() ? bias.data_ptr<float>() : nullptr,
                mask.defined() ? mask.data_ptr<bool>() : nullptr, float(scale), out, lse.data_ptr<float>());
    ctx->save_for_backward({qkv, bias_in, mask_in, out, lse});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &qkv = saved[0], &out = saved[3], &lse = saved[4];
    const at::Tensor bias = saved[1].numel() > 0 ? saved[1].to(at::kFloat).contiguous() : at::Tensor();
    const at::Tensor mask = saved[2].numel() > 0 ? saved[2].to(at::kBool).contiguous() : at::Tensor();
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const float scale = float(ctx->saved_data["scale"].toDouble());
    const Shape s = shape_of(qkv, heads);
    const at::Tensor dout = grads[0].to(qkv.scalar_type()).contiguous();
    auto dqkv = at::empty_like(qkv);  // every element is some tile's dq, dk or dv
    const bool want_bias = bias.defined() && ctx->needs_input_grad(1);
    auto dscores = want_bias ? at::empty({s.b, s.heads, s.n, s.n}, qkv.options().dtype(at::kFloat)) : at::Tensor();
    backward_all(s, qkv, bias.defined() ? bias.data_ptr<float>() : nullptr,
                 mask.defined() ? mask.data_ptr<bool>() : nullptr, scale, out, dout, lse.data_ptr<float>(), dqkv,
                 want_bias ? dscores.data_ptr<float>() : nullptr);
    at::Tensor dbias = want_bias ? dscores.sum(0).to(saved[1].scalar_type()) : at::Tensor();
    return {dqkv, dbias, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool attention_cpu_parallel() {
#ifdef _OPENMP
  return true;
#else
  return false;
#endif
}

bool attention_cpu_supports(const at::Tensor& qkv) {
  return qkv.device().is_cpu() && (qkv.scalar_type() == at::kFloat || qkv.scalar_type() == at::kBFloat16);
}

at::Tensor attention_cpu(const at::Tensor& qkv, int64_t heads, const at::Tensor& bias, const at::Tensor& mask,
                         double scale) {
  TORCH_CHECK(attention_cpu_supports(qkv), "attention_cpu: needs a float or bfloat16 CPU tensor, got ",
              qkv.scalar_type(), " on ", qkv.device());
  const at::Tensor none = at::empty({0}, qkv.options().dtype(at::kFloat));
  const at::Tensor b = bias.defined() ? bias : none, m = mask.defined() ? mask : none;
  return AttentionFunction::apply(qkv, b, m, heads, scale);
}

}  // namespace biaslab
