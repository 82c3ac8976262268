#include "layers/add_norm_kernel.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/kernel_log.h"
#include "layers/kernel_rows.h"
#include "layers/kernel_target.h"

// The row functions are BIASLAB_TARGET_CLONES (kernel_target.h: one copy for x86-64-v3,
// one for the baseline) and their loops are `omp simd`; bf16 rows go through kernel_rows.h.

namespace biaslab {
namespace {

using kernel_rows::chunks_of;
using kernel_rows::finish_row;
using kernel_rows::is_float_or_bf16;
using kernel_rows::kRowsPerChunk;
using kernel_rows::read_row;
using kernel_rows::write_row;

// y <- x + a; n <- LayerNorm(y); mean and 1/std out.
BIASLAB_TARGET_CLONES void add_norm_row(const float* x, const float* a, float* y, const float* w, const float* b,
                                        float eps, int64_t c, float* n, float* mean_out, float* rstd_out) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < c; ++i) {
    y[i] = x[i] + a[i];
    sum += y[i];
  }
  const float mean = sum / float(c);
  float sq = 0.f;
#pragma omp simd reduction(+ : sq)
  for (int64_t i = 0; i < c; ++i) {
    const float d = y[i] - mean;
    sq += d * d;
  }
  const float rstd = 1.f / std::sqrt(sq / float(c) + eps);
#pragma omp simd
  for (int64_t i = 0; i < c; ++i) n[i] = (y[i] - mean) * rstd * w[i] + b[i];
  *mean_out = mean;
  *rstd_out = rstd;
}

// LayerNorm's backward for one row, plus the residual gradient dy (null: none):
//   xhat = (y - mean) rstd, g = dn w,
//   dsum = rstd (g - mean(g) - xhat mean(g xhat)) + dy;  dw += dn xhat;  db += dn.
BIASLAB_TARGET_CLONES void add_norm_row_backward(const float* y, const float* dn, const float* dy, const float* w,
                                                 float mean, float rstd, int64_t c, float* dsum, float* dw,
                                                 float* db) {
  float g_sum = 0.f, gx_sum = 0.f;
#pragma omp simd reduction(+ : g_sum, gx_sum)
  for (int64_t i = 0; i < c; ++i) {
    const float xhat = (y[i] - mean) * rstd;
    const float g = dn[i] * w[i];
    g_sum += g;
    gx_sum += g * xhat;
    dw[i] += dn[i] * xhat;
    db[i] += dn[i];
  }
  const float g_mean = g_sum / float(c), gx_mean = gx_sum / float(c);
#pragma omp simd
  for (int64_t i = 0; i < c; ++i) {
    const float xhat = (y[i] - mean) * rstd;
    dsum[i] = rstd * (dn[i] * w[i] - g_mean - xhat * gx_mean);
  }
  if (dy) {
#pragma omp simd
    for (int64_t i = 0; i < c; ++i) dsum[i] += dy[i];
  }
}

class AddLayerNormFunction : public torch::autograd::Function<AddLayerNormFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x_in,
                                                const at::Tensor& a_in, const at::Tensor& weight_in,
                                                const at::Tensor& bias_in, double eps, int64_t n_dtype) {
    RECORD_FUNCTION("biaslab::add_layer_norm_cpu", std::vector<c10::IValue>());  // named in profiles (bench --trace)
    kernel_log::note("add+LayerNorm", x_in.scalar_type() == at::kFloat && a_in.scalar_type() == at::kFloat ? "fp32" : "bf16 rows in fp32");
    const int64_t c = x_in.size(-1);
    const at::Tensor x = x_in.contiguous(), a = a_in.contiguous();
    const at::Tensor w = weight_in.contiguous(), b = bias_in.contiguous();
    const int64_t rows = x.numel() / c;
    at::Tensor y = at::empty(x.sizes(), x.options().dtype(at::promote_types(x.scalar_type(), a.scalar_type())));
    at::Tensor n = at::empty(x.sizes(), x.options().dtype(static_cast<at::ScalarType>(n_dtype)));
    at::Tensor mean = at::empty({rows}, x.options().dtype(at::kFloat));
    at::Tensor rstd = at::empty({rows}, x.options().dtype(at::kFloat));
    const float* wp = w.data_ptr<float>();
    const float* bp = b.data_ptr<float>();
    float* mp = mean.data_ptr<float>();
    float* rp = rstd.data_ptr<float>();
    at::parallel_for(0, chunks_of(rows), 1, [&](int64_t begin, int64_t end) {
      std::vector<float> buf(size_t(4 * c));
      float *xb = buf.data(), *ab = xb + c, *yb = ab + c, *nb = yb + c;
      for (int64_t r = begin * kRowsPerChunk; r < std::min(rows, end * kRowsPerChunk); ++r) {
        float *yr = write_row(y, r, c, yb), *nr = write_row(n, r, c, nb);
        add_norm_row(read_row(x, r, c, xb), read_row(a, r, c, ab), yr, wp, bp, float(eps), c, nr, mp + r, rp + r);
        finish_row(y, r, c, yr);
        finish_row(n, r, c, nr);
      }
    });
    ctx->save_for_backward({y, w, mean, rstd});
    ctx->saved_data["x_dtype"] = static_cast<int64_t>(x.scalar_type());
    ctx->saved_data["a_dtype"] = static_cast<int64_t>(a.scalar_type());
    return {y, n};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &y = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3];
    const auto x_dtype = static_cast<at::ScalarType>(ctx->saved_data["x_dtype"].toInt());
    const auto a_dtype = static_cast<at::ScalarType>(ctx->saved_data["a_dtype"].toInt());
    const int64_t c = y.size(-1), rows = y.numel() / c;
    if (!grads[1].defined()) {  // n unused: the add's gradient alone
      return {grads[0].to(x_dtype), grads[0].to(a_dtype), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
    const at::Tensor dn = grads[1].contiguous();
    const at::Tensor dy = grads[0].defined() ? grads[0].contiguous() : at::Tensor();
    at::Tensor dx = at::empty(y.sizes(), y.options().dtype(x_dtype));
    at::Tensor da = at::empty(y.sizes(), y.options().dtype(a_dtype));
    const int64_t chunks = chunks_of(rows);
    at::Tensor partial = at::zeros({chunks, 2, c}, y.options().dtype(at::kFloat));  // per chunk: dw, db
    const float* wp = w.data_ptr<float>();
    const float* mp = mean.data_ptr<float>();
    const float* rp = rstd.data_ptr<float>();
    float* pp = partial.data_ptr<float>();
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> buf(size_t(4 * c));
      float *yb = buf.data(), *dnb = yb + c, *dyb = dnb + c, *dsb = dyb + c;
      for (int64_t k = begin; k < end; ++k) {
        float* dw = pp + k * 2 * c;
        for (int64_t r = k * kRowsPerChunk; r < std::min(rows, (k + 1) * kRowsPerChunk); ++r) {
          // The sum's gradient goes to both inputs: computed in dx where that is float.
          float* ds = write_row(dx, r, c, dsb);
          add_norm_row_backward(read_row(y, r, c, yb), read_row(dn, r, c, dnb),
                                dy.defined() ? read_row(dy, r, c, dyb) : nullptr, wp, mp[r], rp[r], c, ds, dw,
                                dw + c);
          finish_row(dx, r, c, ds);
          kernel_rows::store_row(da, r, c, ds);
        }
      }
    });
    const at::Tensor sums = partial.sum(0);
    return {dx, da, sums[0], sums[1], at::Tensor(), at::Tensor()};
  }
};

}  // namespace

bool add_layer_norm_cpu_parallel() {
#ifdef _OPENMP
  return true;
#else
  return false;
#endif
}

bool add_layer_norm_cpu_supports(const at::Tensor& x, const at::Tensor& a, const at::Tensor& weight,
                                 const at::Tensor& bias) {
  if (!x.defined() || !a.defined() || !weight.defined() || !bias.defined()) return false;
  if (!x.device().is_cpu() || !a.device().is_cpu() || !weight.device().is_cpu() || !bias.device().is_cpu())
    return false;
  if (!is_float_or_bf16(x) || !is_float_or_bf16(a) || x.sizes() != a.sizes() || x.dim() < 1 || x.numel() == 0)
    return false;
  const int64_t c = x.size(-1);
  return weight.scalar_type() == at::kFloat && bias.scalar_type() == at::kFloat && weight.dim() == 1 &&
         bias.dim() == 1 && weight.size(0) == c && bias.size(0) == c;
}

std::pair<at::Tensor, at::Tensor> add_layer_norm_cpu(const at::Tensor& x, const at::Tensor& a,
                                                     const at::Tensor& weight, const at::Tensor& bias, double eps,
                                                     c10::ScalarType n_dtype) {
  TORCH_CHECK(add_layer_norm_cpu_supports(x, a, weight, bias),
              "add_layer_norm_cpu: needs CPU float/bf16 x and a of one shape and (C) float weight and bias, got x ",
              x.sizes(), " ", x.scalar_type(), ", a ", a.sizes(), " ", a.scalar_type(), ", weight ",
              weight.defined() ? weight.sizes() : at::IntArrayRef{}, ", bias ",
              bias.defined() ? bias.sizes() : at::IntArrayRef{});
  TORCH_CHECK(n_dtype == at::kFloat || n_dtype == at::kBFloat16, "add_layer_norm_cpu: n_dtype must be float or bf16, got ",
              n_dtype);
  auto out = AddLayerNormFunction::apply(x, a, weight, bias, eps, static_cast<int64_t>(n_dtype));
  return {out[0], out[1]};
}

}  // namespace biaslab
