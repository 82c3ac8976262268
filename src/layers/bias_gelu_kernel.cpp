#include "layers/bias_gelu_kernel.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel_log.h"
#include "layers/kernel_rows.h"
#include "layers/kernel_target.h"
#include "layers/vec_math.h"

// The row functions are BIASLAB_TARGET_CLONES (kernel_target.h: one copy for x86-64-v3,
// one for the baseline); their loops work on 8-float GCC vector types (vec_math.h), a
// row's last c % 8 values through a zero-padded copy; bf16 rows go through kernel_rows.h.

namespace biaslab {
namespace {

using kernel_rows::chunks_of;
using kernel_rows::kRowsPerChunk;
using kernel_rows::read_row;
using vec::v8;

// For z = h + b, eight at a time: Phi(z) (the normal CDF) and phi(z) (its density), from
// erfc(|z| / sqrt 2) = poly(t) exp(-z^2 / 2), t = 1 / (1 + p |z| / sqrt 2) (Abramowitz &
// Stegun 7.1.26): one exp serves both.
struct Normal8 {
  v8 cdf, pdf;
};

BIASLAB_INLINE Normal8 normal8(v8 z) {
  const v8 zero = {};
  const v8 x = z * 0.70710678118654752f;
  const v8 ax = x < zero ? -x : x;
  const v8 t = 1.0f / (ax * 0.3275911f + 1.0f);
  v8 poly = t * 1.061405429f - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  poly = poly * t;
  const v8 e = vec::exp_nonpositive8(-(ax * ax));  // exp(-z^2 / 2)
  const v8 half_erfc = poly * e * 0.5f;
  return {x < zero ? half_erfc : 1.0f - half_erfc, e * 0.39894228040143268f};
}

// y[i] = gelu(h[i] + b[i]) = z Phi(z). A row's last c % 8 values go through a padded
// copy, so that every value is computed the same way.
BIASLAB_TARGET_CLONES void bias_gelu_row(const float* h, const float* b, int64_t c, float* y) {
  int64_t i = 0;
  for (; i + 8 <= c; i += 8) {
    const v8 z = vec::load8(h + i) + vec::load8(b + i);
    vec::store8(y + i, z * normal8(z).cdf);
  }
  if (i == c) return;
  float hz[8] = {}, bz[8] = {}, out[8];
  std::copy(h + i, h + c, hz);
  std::copy(b + i, b + c, bz);
  const v8 z = vec::load8(hz) + vec::load8(bz);
  vec::store8(out, z * normal8(z).cdf);
  std::copy(out, out + (c - i), y + i);
}

// Eight of dz = dy gelu'(h + b), gelu'(z) = Phi(z) + z phi(z); db += dz.
BIASLAB_INLINE void bias_gelu_backward8(const float* h, const float* b, const float* dy, float* dz, float* db) {
  const v8 z = vec::load8(h) + vec::load8(b);
  const Normal8 n = normal8(z);
  const v8 g = vec::load8(dy) * (n.cdf + z * n.pdf);
  vec::store8(dz, g);
  vec::store8(db, vec::load8(db) + g);
}

// A row of the backward pass (the last c % 8 values through a padded copy).
BIASLAB_TARGET_CLONES void bias_gelu_row_backward(const float* h, const float* b, const float* dy, int64_t c,
                                                  float* dz, float* db) {
  int64_t i = 0;
  for (; i + 8 <= c; i += 8) bias_gelu_backward8(h + i, b + i, dy + i, dz + i, db + i);
  if (i == c) return;
  float hz[8] = {}, bz[8] = {}, dyz[8] = {}, dzz[8], dbz[8] = {};
  std::copy(h + i, h + c, hz);
  std::copy(b + i, b + c, bz);
  std::copy(dy + i, dy + c, dyz);
  std::copy(db + i, db + c, dbz);
  bias_gelu_backward8(hz, bz, dyz, dzz, dbz);
  std::copy(dzz, dzz + (c - i), dz + i);
  std::copy(dbz, dbz + (c - i), db + i);
}

class BiasGeluFunction : public torch::autograd::Function<BiasGeluFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& h_in, const at::Tensor& bias_in) {
    RECORD_FUNCTION("biaslab::bias_gelu_cpu", std::vector<c10::IValue>());  // named in profiles (bench --trace)
    kernel_log::note("bias+GELU", h_in.scalar_type() == at::kFloat ? "fp32" : "bf16 rows in fp32");
    const at::Tensor h = h_in.contiguous(), b = bias_in.contiguous();
    const int64_t c = h.size(-1), rows = h.numel() / c;
    at::Tensor y = at::empty(h.sizes(), h.options());
    const float* bp = b.data_ptr<float>();
    at::parallel_for(0, chunks_of(rows), 1, [&](int64_t begin, int64_t end) {
      std::vector<float> buf(size_t(2 * c));
      float *hb = buf.data(), *yb = hb + c;
      for (int64_t r = begin * kRowsPerChunk; r < std::min(rows, end * kRowsPerChunk); ++r) {
        float* yr = kernel_rows::write_row(y, r, c, yb);
        bias_gelu_row(read_row(h, r, c, hb), bp, c, yr);
        kernel_rows::finish_row(y, r, c, yr);
      }
    });
    ctx->save_for_backward({h, b});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &h = saved[0], &b = saved[1];
    const at::Tensor dy = grads[0].contiguous();
    const int64_t c = h.size(-1), rows = h.numel() / c, chunks = chunks_of(rows);
    at::Tensor dh = at::empty(h.sizes(), h.options());
    at::Tensor partial = at::zeros({chunks, c}, b.options());  // per chunk: the bias gradient
    const float* bp = b.data_ptr<float>();
    float* pp = partial.data_ptr<float>();
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> buf(size_t(3 * c));
      float *hb = buf.data(), *dyb = hb + c, *dzb = dyb + c;
      for (int64_t k = begin; k < end; ++k)
        for (int64_t r = k * kRowsPerChunk; r < std::min(rows, (k + 1) * kRowsPerChunk); ++r) {
          float* dz = kernel_rows::write_row(dh, r, c, dzb);
          bias_gelu_row_backward(read_row(h, r, c, hb), bp, read_row(dy, r, c, dyb), c, dz, pp + k * c);
          kernel_rows::finish_row(dh, r, c, dz);
        }
    });
    return {dh, partial.sum(0)};
  }
};

}  // namespace

bool bias_gelu_cpu_supports(const at::Tensor& h, const at::Tensor& bias) {
  if (!h.defined() || !bias.defined() || !h.device().is_cpu() || !bias.device().is_cpu()) return false;
  if (!kernel_rows::is_float_or_bf16(h) || h.dim() < 1 || h.numel() == 0) return false;
  return bias.scalar_type() == at::kFloat && bias.dim() == 1 && bias.size(0) == h.size(-1);
}

at::Tensor bias_gelu_cpu(const at::Tensor& h, const at::Tensor& bias) {
  auto describe = [](const at::Tensor& t) {
    return t.defined() ? c10::str(t.sizes(), " ", t.scalar_type(), " on ", t.device()) : std::string("undefined");
  };
  TORCH_CHECK(bias_gelu_cpu_supports(h, bias),
              "bias_gelu_cpu: needs a CPU float/bf16 h of shape (..., C) and a (C) float bias, got h ", describe(h),
              ", bias ", describe(bias));
  return BiasGeluFunction::apply(h, bias);
}

}  // namespace biaslab
