#include "layers/attention_kernel.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

// The tile functions are compiled twice on x86-64 GCC, for x86-64-v3 (AVX2, FMA) and for the
// baseline, and the loader picks one per machine (ifunc); their inner loops are plain C++
// that the compiler vectorises (`omp simd`, enabled for this file with -fopenmp-simd).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define BIASLAB_TARGET_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define BIASLAB_TARGET_CLONES
#endif
#define BIASLAB_INLINE inline __attribute__((always_inline))

namespace biaslab {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

BIASLAB_INLINE float dot(const float* a, const float* b, int64_t d) {
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < d; ++i) acc += a[i] * b[i];
  return acc;
}

BIASLAB_INLINE void axpy(float alpha, const float* x, float* y, int64_t d) {
#pragma omp simd
  for (int64_t i = 0; i < d; ++i) y[i] += alpha * x[i];
}

// x[j] <- exp(x[j] - shift) for j < n, 0 where x[j] is -inf (or the result underflows).
// Cephes' single-precision exp (range reduction by ln 2 in two parts, degree-6
// polynomial, 2^k from the exponent bits): within 2 ulp of std::exp over [-87, 0], in
// a loop the compiler vectorises (std::exp would be a scalar call per element).
BIASLAB_INLINE void exp_shifted(float* x, int64_t n, float shift) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float t = x[j] - shift;  // <= 0 (shift is the row maximum or the log-sum-exp)
    const float c = t < -87.0f ? -87.0f : t;
    const float k = std::floor(c * 1.44269504088896341f + 0.5f);
    float r = c - k * 0.693359375f;
    r = r + k * 2.12194440e-4f;
    const float r2 = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r2 + r + 1.0f;
    const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    x[j] = t < -87.0f ? 0.0f : p * scale;
  }
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

// dst (d x n) = the tile's rows src_j (n of them, d wide, ld apart) as columns.
BIASLAB_INLINE void transpose_rows(const float* src, int64_t n, int64_t d, int64_t ld, float* dst) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t c = 0; c < d; ++c) dst[c * n + j] = src[j * ld + c];
}

// Scores of query row i into s (n floats): scale q_i . k_j + bias_ij, -inf where masked;
// kt is k transposed (d x n), so every step is a vector operation along the keys.
BIASLAB_INLINE void scores(const Tile& t, const float* kt, int64_t i, float* s) {
  const float* qi = t.q + i * t.ld;
  if (t.bias) std::memcpy(s, t.bias + i * t.n, sizeof(float) * size_t(t.n));
  else std::memset(s, 0, sizeof(float) * size_t(t.n));
  for (int64_t c = 0; c < t.d; ++c) axpy(t.scale * qi[c], kt + c * t.n, s, t.n);
  if (t.mask) {
    const bool* m = t.mask + i * t.n;
    for (int64_t j = 0; j < t.n; ++j)
      if (!m[j]) s[j] = kNegInf;
  }
}

// out rows (n x d, ldo apart) and the rows' log-sum-exp (n); scratch: n + d n floats.
BIASLAB_TARGET_CLONES void forward_tile(const Tile& t, float* out, float* lse, float* scratch) {
  float* s = scratch;
  float* kt = scratch + t.n;
  transpose_rows(t.k, t.n, t.d, t.ld, kt);
  for (int64_t i = 0; i < t.n; ++i) {
    scores(t, kt, i, s);
    float m = kNegInf;
    for (int64_t j = 0; j < t.n; ++j) m = s[j] > m ? s[j] : m;
    float* oi = out + i * t.ldo;
    std::memset(oi, 0, sizeof(float) * size_t(t.d));
    if (m == kNegInf) {  // nothing to attend to: zero output, no gradient
      lse[i] = kNegInf;
      continue;
    }
    exp_shifted(s, t.n, m);
    float l = 0.f;
    for (int64_t j = 0; j < t.n; ++j) l += s[j];
    const float inv = 1.0f / l;
    for (int64_t j = 0; j < t.n; ++j)
      if (s[j] != 0.f) axpy(s[j] * inv, t.v + j * t.ld, oi, t.d);
    lse[i] = m + std::log(l);
  }
}

// Gradients of one tile: dq, dk, dv (rows ld apart, dk and dv accumulated, so zeroed by
// the caller), and ds (n x n) when dbias is not null. scratch: 2 n + 2 d n floats.
BIASLAB_TARGET_CLONES void backward_tile(const Tile& t, const float* out, const float* dout, const float* lse,
                                         float* dq, float* dk, float* dv, float* dbias, float* scratch) {
  float* p = scratch;
  float* dp = scratch + t.n;
  float* kt = scratch + 2 * t.n;
  float* vt = kt + t.d * t.n;
  transpose_rows(t.k, t.n, t.d, t.ld, kt);
  transpose_rows(t.v, t.n, t.d, t.ld, vt);
  for (int64_t i = 0; i < t.n; ++i) {
    float* dsi = dbias ? dbias + i * t.n : nullptr;
    if (lse[i] == kNegInf) {
      if (dsi) std::memset(dsi, 0, sizeof(float) * size_t(t.n));
      continue;
    }
    const float* doi = dout + i * t.ldo;
    const float di = dot(doi, out + i * t.ldo, t.d);  // sum_j p_ij (do_i . v_j)
    scores(t, kt, i, p);
    exp_shifted(p, t.n, lse[i]);  // the forward's probabilities
    std::memset(dp, 0, sizeof(float) * size_t(t.n));
    for (int64_t c = 0; c < t.d; ++c) axpy(doi[c], vt + c * t.n, dp, t.n);  // do_i . v_j
#pragma omp simd
    for (int64_t j = 0; j < t.n; ++j) dp[j] = p[j] * (dp[j] - di);  // softmax backward: ds
    if (dsi) std::memcpy(dsi, dp, sizeof(float) * size_t(t.n));
    const float* qi = t.q + i * t.ld;
    float* dqi = dq + i * t.ld;
    for (int64_t j = 0; j < t.n; ++j) {
      if (p[j] == 0.f) continue;
      const float ds = dp[j] * t.scale;
      axpy(p[j], doi, dv + j * t.ld, t.d);
      axpy(ds, t.k + j * t.ld, dqi, t.d);
      axpy(ds, qi, dk + j * t.ld, t.d);
    }
  }
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
      std::vector<float> scratch(size_t(s.n + s.d * s.n));
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
    auto dqkv = at::zeros_like(qkv);
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
      std::vector<float> scratch(size_t(2 * s.n + 2 * s.d * s.n));
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
