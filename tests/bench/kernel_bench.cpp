// Times biaslab's fused CPU kernels against the LibTorch operators they replace, on one
// transformer block's tensors (vit_lite_p4 at batch 128: 50 tokens of width 128, 4 heads):
//   add+norm:  add_layer_norm_cpu  vs  x + a, layer_norm (and the cast to bf16 in bf16), with
//              an fp32 residual stream x and, in bf16, also a bf16 one ("bf16 stream");
//   attention: attention_cpu       vs  matmul, softmax, matmul on the qkv projection,
//              and (LibTorch 2.x) vs its scaled_dot_product_attention ("vs SDPA");
//   fc1+gelu:  linear without bias, bias_gelu_cpu  vs  linear with bias, gelu (the MLP's
//              first projection to 4x the width and its activation, projection included).
// Forward, and forward + backward; the best of --repeats calls after warm-up.
// Not built by default: `ninja -C build kernel_bench`, then
//   build/tests/kernel_bench [--threads N] [--batch B] [--tokens N] [--width C] [--heads H] [--repeats R]
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "core/runtime.h"
#include "core/torch_compat.h"
#include "layers/add_norm_kernel.h"
#include "layers/attention_kernel.h"
#include "layers/bias_gelu_kernel.h"

namespace {

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timing {
  double forward = 1e30, both = 1e30;  // seconds, best of the repeats
};

// `step` runs the forward pass and returns the outputs with their upstream gradients.
Timing time_it(int repeats, const std::function<std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>()>& step,
               const std::vector<torch::Tensor>& leaves) {
  Timing t;
  for (int r = 0; r < repeats + 3; ++r) {
    const double t0 = seconds();
    auto [outs, grads] = step();
    const double t1 = seconds();
    torch::autograd::backward(outs, grads);
    const double t2 = seconds();
    for (auto leaf : leaves) leaf.mutable_grad().reset();
    if (r < 3) continue;  // warm-up
    t.forward = std::min(t.forward, t1 - t0);
    t.both = std::min(t.both, t2 - t0);
  }
  return t;
}

void report(const char* what, const char* dtype, const Timing& fused, const Timing& reference) {
  std::printf("  %-9s %-4s  forward %7.3f ms vs %7.3f ms (%.2fx)   forward+backward %7.3f ms vs %7.3f ms (%.2fx)\n",
              what, dtype, fused.forward * 1e3, reference.forward * 1e3, reference.forward / fused.forward,
              fused.both * 1e3, reference.both * 1e3, reference.both / fused.both);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, repeats = 30;
  int64_t batch = 128, tokens = 50, width = 128, heads = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (value <= 0) {
      std::fprintf(stderr, "kernel_bench: %s needs a positive integer, got '%s'\n", flag.c_str(), argv[i + 1]);
      return 2;
    }
    if (flag == "--threads") threads = int(value);
    else if (flag == "--repeats") repeats = int(value);
    else if (flag == "--batch") batch = value;
    else if (flag == "--tokens") tokens = value;
    else if (flag == "--width") width = value;
    else if (flag == "--heads") heads = value;
    else {
      std::fprintf(stderr, "kernel_bench: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  biaslab::tune_allocator();
  at::set_num_threads(threads);
  torch::manual_seed(0);
  std::printf("kernel_bench: batch %lld, %lld tokens of width %lld, %lld heads, %d thread(s), best of %d; fused vs "
              "reference, ratio = reference / fused\n",
              (long long)batch, (long long)tokens, (long long)width, (long long)heads, threads, repeats);
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const bool bf16 = dtype == torch::kBFloat16;
    const char* name = bf16 ? "bf16" : "fp32";
    // add+norm: an fp32 residual stream plus a branch in the run's precision, as in a block.
    auto x = torch::randn({batch, tokens, width}).requires_grad_(true);
    auto a = torch::randn({batch, tokens, width}).to(dtype).requires_grad_(true);
    auto w = torch::ones({width}).requires_grad_(true), b = torch::zeros({width}).requires_grad_(true);
    auto gy = torch::randn({batch, tokens, width}), gn = torch::randn({batch, tokens, width}).to(dtype);
    const std::vector<torch::Tensor> leaves = {x, a, w, b};
    auto fused = time_it(repeats, [&] {
      auto [y, n] = biaslab::add_layer_norm_cpu(x, a, w, b, 1e-6, dtype);
      return std::make_pair(std::vector<torch::Tensor>{y, n}, std::vector<torch::Tensor>{gy, gn});
    }, leaves);
    auto reference = time_it(repeats, [&] {
      auto y = x + a;
      auto n = torch::layer_norm(y, {width}, w, b, 1e-6).to(dtype);
      return std::make_pair(std::vector<torch::Tensor>{y, n}, std::vector<torch::Tensor>{gy, gn});
    }, leaves);
    report("add+norm", name, fused, reference);
    if (bf16) {  // a bf16 residual stream (model.residual_stream: autocast): x, y and their gradient bf16 too
      auto xs = x.detach().to(dtype).requires_grad_(true);
      auto gys = gy.to(dtype);
      const std::vector<torch::Tensor> stream_leaves = {xs, a, w, b};
      auto fused_stream = time_it(repeats, [&] {
        auto [y, n] = biaslab::add_layer_norm_cpu(xs, a, w, b, 1e-6, dtype);
        return std::make_pair(std::vector<torch::Tensor>{y, n}, std::vector<torch::Tensor>{gys, gn});
      }, stream_leaves);
      auto reference_stream = time_it(repeats, [&] {
        auto y = xs + a;  // LayerNorm in fp32, as LayerNormFp32 (1.13's takes no bf16 input with fp32 weights)
        auto n = torch::layer_norm(y.to(torch::kFloat), {width}, w, b, 1e-6).to(dtype);
        return std::make_pair(std::vector<torch::Tensor>{y, n}, std::vector<torch::Tensor>{gys, gn});
      }, stream_leaves);
      report("add+norm", "bf16 stream", fused_stream, reference_stream);
    }
    // attention on a (B, N, 3C) qkv projection output.
    auto qkv = torch::randn({batch, tokens, 3 * width}).to(dtype).requires_grad_(true);
    auto go = torch::randn({batch, tokens, width}).to(dtype);
    const double scale = 1.0 / std::sqrt(double(width / heads));
    auto fused_attn = time_it(repeats, [&] {
      auto o = biaslab::attention_cpu(qkv, heads, {}, {}, scale);
      return std::make_pair(std::vector<torch::Tensor>{o}, std::vector<torch::Tensor>{go});
    }, {qkv});
    auto reference_attn = time_it(repeats, [&] {
      auto parts = qkv.view({batch, tokens, 3, heads, width / heads}).permute({2, 0, 3, 1, 4}).unbind(0);
      auto p = (torch::matmul(parts[0], parts[1].transpose(-2, -1)) * scale).softmax(-1);
      auto o = torch::matmul(p, parts[2]).transpose(1, 2).reshape({batch, tokens, width});
      return std::make_pair(std::vector<torch::Tensor>{o}, std::vector<torch::Tensor>{go});
    }, {qkv});
    report("attention", name, fused_attn, reference_attn);
    if (biaslab::compat::has_fused_attention()) {  // LibTorch 2.x: its scaled_dot_product_attention
      auto sdpa = time_it(repeats, [&] {
        auto parts = qkv.view({batch, tokens, 3, heads, width / heads}).permute({2, 0, 3, 1, 4}).unbind(0);
        auto o = biaslab::compat::fused_attention(parts[0], parts[1], parts[2], {}, 0.0)
                     .transpose(1, 2)
                     .reshape({batch, tokens, width});
        return std::make_pair(std::vector<torch::Tensor>{o}, std::vector<torch::Tensor>{go});
      }, {qkv});
      report("vs SDPA", name, fused_attn, sdpa);
    }
    // The MLP's fc1 + GELU, under autocast in bf16 as in training (the weight is fp32).
    auto t = torch::randn({batch, tokens, width}).to(dtype).requires_grad_(true);
    auto w1 = (torch::randn({4 * width, width}) * 0.05).requires_grad_(true);
    auto b1 = torch::randn({4 * width}).mul(0.1).requires_grad_(true);
    auto gh = torch::randn({batch, tokens, 4 * width}).to(dtype);
    if (bf16) biaslab::compat::set_autocast(c10::DeviceType::CPU, true, at::kBFloat16);
    auto fused_mlp = time_it(repeats, [&] {
      auto h = biaslab::bias_gelu_cpu(torch::linear(t, w1), b1);
      return std::make_pair(std::vector<torch::Tensor>{h}, std::vector<torch::Tensor>{gh});
    }, {t, w1, b1});
    auto reference_mlp = time_it(repeats, [&] {
      auto h = torch::gelu(torch::linear(t, w1, b1));
      return std::make_pair(std::vector<torch::Tensor>{h}, std::vector<torch::Tensor>{gh});
    }, {t, w1, b1});
    if (bf16) {
      biaslab::compat::set_autocast(c10::DeviceType::CPU, false, at::kBFloat16);
      biaslab::compat::clear_autocast_cache();
    }
    report("fc1+gelu", name, fused_mlp, reference_mlp);
  }
  return 0;
}
