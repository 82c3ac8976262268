#include "layers/attention_kernel.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

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

// The shapes and pointers of one (batch, head) tile. Rows of q, k, v (and of their
// gradients) are `ld` floats apart, rows of the output `ldo` apart; bias, mask and
// dbias are N x N row-major or null.
struct Tile {
  int64_t n, d, ld, ldo;
  float scale;
  const float *q, *k, *v;
  const float* bias;
  const bool* mask;
};

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

// s (n x n) <- the tile's probabilities: scale q k^T + bias, -inf where masked, then
// per row exp(. - shift_i) with shift_i the row's maximum (forward: lse_i is then
// written) or the saved log-sum-exp (backward: rows normalised already). kt: k^T (d x n).
BIASLAB_INLINE void probabilities(const Tile& t, const float* kt, float* s, float* lse, bool forward) {
  gemm(t.n, t.n, t.d, t.scale, t.q, t.ld, kt, t.n, s, t.n);
  for (int64_t i = 0; i < t.n; ++i) {
    float* si = s + i * t.n;
    if (t.bias) {
      const float* b = t.bias + i * t.n;
#pragma omp simd
      for (int64_t j = 0; j < t.n; ++j) si[j] += b[j];
    }
    if (t.mask) {
      const bool* m = t.mask + i * t.n;
      for (int64_t j = 0; j < t.n; ++j)
        if (!m[j]) si[j] = kNegInf;
    }
    float shift = lse[i];
    if (forward) {
      shift = kNegInf;
      for (int64_t j = 0; j < t.n; ++j) shift = si[j] > shift ? si[j] : shift;
    }
    if (shift == kNegInf) {  // nothing to attend to: zero output, no gradient
      std::memset(si, 0, sizeof(float) * size_t(t.n));
      lse[i] = kNegInf;
      continue;
    }
    exp_shifted(si, t.n, shift);
    if (forward) {
      float l = 0.f;
      for (int64_t j = 0; j < t.n; ++j) l += si[j];
      const float inv = 1.0f / l;
#pragma omp simd
      for (int64_t j = 0; j < t.n; ++j) si[j] *= inv;
      lse[i] = shift + std::log(l);
    }
  }
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

Tile tile_of(const Shape& s, const float* qkv, const float* bias, const bool* mask, float scale, int64_t bh) {
  const int64_t b = bh / s.heads, h = bh % s.heads;
  const float* base = qkv + b * s.n * 3 * s.c + h * s.d;
  return {s.n, s.d, 3 * s.c, s.c, scale, base, base + s.c, base + 2 * s.c,
          bias ? bias + h * s.n * s.n : nullptr, mask};
}

class AttentionFunction : public torch::autograd::Function<AttentionFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& qkv_in, const at::Tensor& bias_in,
                            const at::Tensor& mask_in, int64_t heads, double scale) {
    RECORD_FUNCTION("biaslab::attention_cpu", std::vector<c10::IValue>());  // named in profiles (bench --trace)
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
    auto lse = at::empty({s.b, s.heads, s.n}, qkv.options());
    const float* qp = qkv.data_ptr<float>();
    const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
    const bool* mp = mask.defined() ? mask.data_ptr<bool>() : nullptr;
    float* op = out.data_ptr<float>();
    float* lp = lse.data_ptr<float>();
    at::parallel_for(0, s.b * s.heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> scratch(size_t(s.d * s.n + s.n * s.n));
      for (int64_t bh = begin; bh < end; ++bh) {
        const Tile t = tile_of(s, qp, bp, mp, float(scale), bh);
        const int64_t b = bh / s.heads, h = bh % s.heads;
        forward_tile(t, op + b * s.n * s.c + h * s.d, lp + bh * s.n, scratch.data());
      }
    });
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
    const at::Tensor dout = grads[0].to(at::kFloat).contiguous();
    auto dqkv = at::empty_like(qkv);  // every element is some tile's dq, dk or dv
    const bool want_bias = bias.defined() && ctx->needs_input_grad(1);
    auto dscores = want_bias ? at::empty({s.b, s.heads, s.n, s.n}, qkv.options()) : at::Tensor();
    const float* qp = qkv.data_ptr<float>();
    const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
    const bool* mp = mask.defined() ? mask.data_ptr<bool>() : nullptr;
    const float* op = out.data_ptr<float>();
    const float* dop = dout.data_ptr<float>();
    const float* lp = lse.data_ptr<float>();
    float* dp = dqkv.data_ptr<float>();
    float* dsp = want_bias ? dscores.data_ptr<float>() : nullptr;
    at::parallel_for(0, s.b * s.heads, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> scratch(size_t(2 * s.d * s.n + 3 * s.n * s.n));
      for (int64_t bh = begin; bh < end; ++bh) {
        const Tile t = tile_of(s, qp, bp, mp, scale, bh);
        const int64_t b = bh / s.heads, h = bh % s.heads;
        const int64_t row0 = b * s.n * s.c + h * s.d;  // this tile's first output row
        float* dq = dp + b * s.n * 3 * s.c + h * s.d;
        backward_tile(t, op + row0, dop + row0, lp + bh * s.n, dq, dq + s.c, dq + 2 * s.c,
                      dsp ? dsp + bh * s.n * s.n : nullptr, scratch.data());
      }
    });
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
  if (qkv.scalar_type() == at::kBFloat16)
    return AttentionFunction::apply(qkv.to(at::kFloat), b, m, heads, scale).to(at::kBFloat16);
  return AttentionFunction::apply(qkv, b, m, heads, scale);
}

}  // namespace biaslab
