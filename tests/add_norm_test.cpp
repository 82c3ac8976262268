#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/runtime.h"
#include "core/torch_compat.h"
#include "layers/add_norm_kernel.h"
#include "layers/attention_kernel.h"
#include "layers/transformer_block.h"
#include "test_util.h"

using namespace biaslab;

namespace {

using test::relative_error;
using test::tensors_close;

struct Case {
  torch::Tensor x, a, w, b;
};

// x, a of `shape` in their dtypes (leaves that need gradients), a random affine norm.
Case make_case(std::vector<int64_t> shape, torch::ScalarType x_dtype, torch::ScalarType a_dtype) {
  const int64_t c = shape.back();
  return {(torch::randn(shape) * 3.0 + 1.0).to(x_dtype).requires_grad_(true),
          torch::randn(shape).to(a_dtype).requires_grad_(true), (torch::randn({c}) + 1.0).requires_grad_(true),
          torch::randn({c}).requires_grad_(true)};
}

// The kernel against x + a followed by LibTorch's layer_norm (in fp32, then cast to
// n_dtype): both outputs, and the gradients of x, a, weight and bias for random upstream
// gradients of both outputs.
void expect_matches_reference(const Case& k, torch::ScalarType n_dtype, double rtol, double atol,
                              const std::string& what) {
  const double eps = 1e-6;
  auto [y, n] = add_layer_norm_cpu(k.x, k.a, k.w, k.b, eps, n_dtype);
  auto y_ref = k.x + k.a;
  auto n_ref = torch::layer_norm(y_ref.to(torch::kFloat), {k.x.size(-1)}, k.w, k.b, eps).to(n_dtype);
  ASSERT_EQ(y.scalar_type(), y_ref.scalar_type()) << what;
  ASSERT_EQ(n.scalar_type(), n_dtype) << what;
  EXPECT_TRUE(tensors_close(y, y_ref, 0, 0)) << what << ": y";  // the same single rounding
  EXPECT_TRUE(tensors_close(n, n_ref, rtol, atol)) << what << ": n";
  auto gy = torch::randn_like(y), gn = torch::randn_like(n);
  const std::vector<torch::Tensor> inputs = {k.x, k.a, k.w, k.b};
  auto g = torch::autograd::grad({y, n}, inputs, {gy, gn});
  auto g_ref = torch::autograd::grad({y_ref, n_ref}, inputs, {gy, gn});
  const char* names[] = {"x", "a", "weight", "bias"};
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(g[i].scalar_type(), inputs[i].scalar_type()) << what << ": " << names[i];
    EXPECT_TRUE(tensors_close(g[i], g_ref[i], rtol, atol)) << what << ": gradient of " << names[i];
  }
}

}  // namespace

TEST(AddNorm, MatchesTheReferenceInFp32OnRandomShapes) {
  // fp32: agreement to 1e-5 relative / 1e-5 absolute, forward and backward, for widths
  // below, at and above the vector width and leading shapes of 1 to 3 dimensions (not a
  // width of 1, whose variance is rounding noise that 1/sqrt(eps) magnifies on either path).
  torch::manual_seed(0);
  const std::vector<std::vector<int64_t>> shapes = {{1, 3}, {3, 5}, {2, 7, 8}, {4, 17, 64}, {130, 33}, {2, 3, 5, 130}};
  for (const auto& shape : shapes) {
    expect_matches_reference(make_case(shape, torch::kFloat, torch::kFloat), torch::kFloat, 1e-5, 1e-5,
                             "shape " + c10::str(c10::IntArrayRef(shape)));
  }
}

TEST(AddNorm, Bf16InputsAndOutput) {
  // What a block under bf16 autocast gives the kernel: an fp32 residual stream plus a bf16
  // branch, the normalised tokens wanted in bf16; also both inputs bf16 (y in bf16). The
  // reference rounds the same fp32 values to bf16; agreement to bf16's resolution (1e-2).
  torch::manual_seed(1);
  expect_matches_reference(make_case({3, 9, 48}, torch::kFloat, torch::kBFloat16), torch::kBFloat16, 1e-2, 1e-2,
                           "fp32 + bf16 -> bf16");
  expect_matches_reference(make_case({3, 9, 48}, torch::kBFloat16, torch::kBFloat16), torch::kBFloat16, 1e-2, 1e-2,
                           "bf16 + bf16 -> bf16");
  expect_matches_reference(make_case({3, 9, 48}, torch::kBFloat16, torch::kFloat), torch::kFloat, 1e-5, 1e-5,
                           "bf16 + fp32 -> fp32");
}

TEST(AddNorm, GradientWhenOnlyTheSumIsUsed) {
  torch::manual_seed(2);
  auto k = make_case({2, 4, 6}, torch::kFloat, torch::kBFloat16);
  auto [y, n] = add_layer_norm_cpu(k.x, k.a, k.w, k.b, 1e-6, torch::kFloat);
  y.sum().backward();
  EXPECT_TRUE(torch::equal(k.x.grad(), torch::ones_like(k.x)));
  EXPECT_EQ(k.a.grad().scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(k.a.grad().to(torch::kFloat), torch::ones({2, 4, 6})));
  EXPECT_FALSE(k.w.grad().defined() && k.w.grad().abs().sum().item<float>() != 0.f);
}

TEST(AddNorm, GradientsDoNotDependOnTheThreadCount) {
  // The weight and bias gradients are sums over rows in fixed chunks: the same bits with
  // 1 thread and with 2.
  torch::manual_seed(3);
  auto k = make_case({8, 50, 32}, torch::kFloat, torch::kFloat);
  const int before = at::get_num_threads();
  std::vector<std::vector<torch::Tensor>> grads;
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    auto [y, n] = add_layer_norm_cpu(k.x, k.a, k.w, k.b, 1e-6, torch::kFloat);
    torch::manual_seed(4);
    grads.push_back(torch::autograd::grad({y, n}, {k.x, k.w, k.b}, {torch::randn_like(y), torch::randn_like(n)}));
  }
  at::set_num_threads(before);
  for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_TRUE(torch::equal(grads[0][i], grads[1][i])) << i;
}

TEST(AddNorm, KernelsRunOnTheIntraOpThreads) {
  // Both fused kernels' files are compiled with OpenMP (CMakeLists.txt); without it
  // at::parallel_for compiles to a serial loop and they ignored runtime.threads.
  EXPECT_TRUE(add_layer_norm_cpu_parallel());
  EXPECT_TRUE(attention_cpu_parallel());
}

TEST(AddNorm, RefusesWhatItDoesNotServe) {
  auto x = torch::randn({2, 3, 4}), w = torch::ones({4}), b = torch::zeros({4});
  EXPECT_TRUE(add_layer_norm_cpu_supports(x, x, w, b));
  EXPECT_FALSE(add_layer_norm_cpu_supports(x, torch::randn({2, 3, 5}), w, b));        // shapes differ
  EXPECT_FALSE(add_layer_norm_cpu_supports(x, x, torch::ones({5}), b));               // weight width
  EXPECT_FALSE(add_layer_norm_cpu_supports(x, x, w, torch::Tensor()));                // no bias
  EXPECT_FALSE(add_layer_norm_cpu_supports(x.to(torch::kDouble), x, w, b));           // dtype
  EXPECT_FALSE(add_layer_norm_cpu_supports(x, x, w.to(torch::kBFloat16), b));         // bf16 weight
  EXPECT_THROW(add_layer_norm_cpu(x, torch::randn({2, 3, 5}), w, b, 1e-6, torch::kFloat), c10::Error);
  EXPECT_THROW(add_layer_norm_cpu(x, x, w, b, 1e-6, torch::kHalf), c10::Error);
}

namespace {

// A pre-norm block's output and every gradient under runtime.kernels=fused against
// reference, on the same weights.
void expect_block_paths_agree(const TransformerBlockOptions& o, const torch::Tensor& x_in, double tol_norm,
                              const std::string& what) {
  TransformerBlock block(o);
  std::vector<torch::Tensor> outs, x_grads;
  std::vector<std::vector<torch::Tensor>> p_grads;
  for (auto mode : {KernelMode::Fused, KernelMode::Reference}) {
    KernelModeScope scope(mode);
    block->zero_grad();
    auto x = x_in.detach().clone().requires_grad_(true);
    auto y = block(x);
    torch::manual_seed(5);
    (y.to(torch::kFloat) * torch::randn(y.sizes())).sum().backward();
    outs.push_back(y.detach().to(torch::kFloat));
    x_grads.push_back(x.grad());
    std::vector<torch::Tensor> g;
    for (const auto& p : block->parameters()) g.push_back(p.grad().detach().clone());
    p_grads.push_back(g);
  }
  EXPECT_LE(relative_error(outs[0], outs[1]), tol_norm) << what << ": output";
  EXPECT_LE(relative_error(x_grads[0], x_grads[1]), tol_norm) << what << ": input gradient";
  for (size_t i = 0; i < p_grads[0].size(); ++i)
    EXPECT_LE(relative_error(p_grads[0][i], p_grads[1][i]), tol_norm) << what << ": parameter " << i;
}

}  // namespace

TEST(AddNorm, TransformerBlockFusedAgreesWithReference) {
  // Relative error of the block's output and of every gradient: 1e-5 in fp32 (with
  // LayerScale and stochastic depth off, as in eval), 2e-2 under bf16 autocast.
  torch::manual_seed(6);
  auto o = TransformerBlockOptions(32, 4).mlp_ratio(2.0);
  expect_block_paths_agree(o, torch::randn({3, 10, 32}), 1e-5, "fp32");
  expect_block_paths_agree(TransformerBlockOptions(o).layer_scale_init(0.1), torch::randn({3, 10, 32}), 1e-5,
                           "fp32, LayerScale");
  compat::set_autocast(c10::DeviceType::CPU, true, at::kBFloat16);
  expect_block_paths_agree(o, torch::randn({3, 10, 32}), 2e-2, "bf16 autocast");
  compat::set_autocast(c10::DeviceType::CPU, false, at::kBFloat16);
  compat::clear_autocast_cache();
}

TEST(AddNorm, BlockOutputUnderBf16AutocastIsFp32Stream) {
  // The fused path keeps the block's contract: the residual stream stays fp32 under bf16
  // autocast, as on the reference path.
  TransformerBlock block(TransformerBlockOptions(16, 2));
  compat::set_autocast(c10::DeviceType::CPU, true, at::kBFloat16);
  torch::Tensor fused, reference;
  {
    KernelModeScope scope(KernelMode::Fused);
    fused = block(torch::randn({2, 5, 16}));
  }
  {
    KernelModeScope scope(KernelMode::Reference);
    reference = block(torch::randn({2, 5, 16}));
  }
  compat::set_autocast(c10::DeviceType::CPU, false, at::kBFloat16);
  compat::clear_autocast_cache();
  EXPECT_EQ(fused.scalar_type(), reference.scalar_type());
  EXPECT_EQ(fused.scalar_type(), torch::kFloat);
}
