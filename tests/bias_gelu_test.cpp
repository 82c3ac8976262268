#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/runtime.h"
#include "core/torch_compat.h"
#include "layers/bias_gelu_kernel.h"
#include "layers/mlp.h"
#include "test_util.h"

using namespace biaslab;

namespace {

using test::relative_error;
using test::tensors_close;

// The kernel against LibTorch's gelu(h + bias) computed in fp64 (then cast to h's dtype):
// the output, and the gradients of h and bias for a random upstream gradient. The
// reference is fp64 because LibTorch's own fp32 gelu is not exact enough to judge the
// kernel by: PyPI's torch 2.x on an AVX-512 CPU is 1.06e-6 off fp64 on these inputs
// (the kernel: 3.9e-7), which failed a 1e-6 tolerance against an fp32 reference.
void expect_matches_reference(const torch::Tensor& h, const torch::Tensor& bias, double rtol, double atol,
                              const std::string& what) {
  auto y = bias_gelu_cpu(h, bias);
  auto y_ref = torch::gelu(h.to(torch::kDouble) + bias.to(torch::kDouble)).to(h.scalar_type());
  ASSERT_EQ(y.scalar_type(), h.scalar_type()) << what;
  EXPECT_TRUE(tensors_close(y, y_ref, rtol, atol)) << what << ": output";
  auto gy = torch::randn(y.sizes()).to(y.scalar_type());
  auto g = torch::autograd::grad({y}, {h, bias}, {gy});
  auto g_ref = torch::autograd::grad({y_ref}, {h, bias}, {gy});
  ASSERT_EQ(g[0].scalar_type(), h.scalar_type()) << what;
  ASSERT_EQ(g[1].scalar_type(), torch::kFloat) << what;
  EXPECT_TRUE(tensors_close(g[0], g_ref[0], rtol, atol)) << what << ": gradient of h";
  // The bias gradient sums a column over every row: its tolerance grows with the rows.
  const double rows = double(h.numel() / h.size(-1));
  EXPECT_TRUE(tensors_close(g[1], g_ref[1], rtol, atol * rows)) << what << ": gradient of bias";
}

torch::Tensor leaf(const torch::Tensor& t) { return t.detach().clone().requires_grad_(true); }

}  // namespace

TEST(BiasGelu, MatchesTheReferenceInFp32OnRandomShapes) {
  // fp32: 1e-5 relative, 1e-6 absolute (erf's approximation is within 1.5e-7), forward
  // and backward, for widths below, at and above the vector width of 8 (the last c % 8
  // values take the padded path) and 1 to 3 leading dimensions; values spread to +-12 so
  // both tails of the GELU are reached.
  torch::manual_seed(0);
  const std::vector<std::vector<int64_t>> shapes = {{1, 1}, {3, 5}, {2, 7, 8}, {4, 17, 64}, {130, 13}, {2, 3, 5, 130}};
  for (const auto& shape : shapes) {
    const int64_t c = shape.back();
    expect_matches_reference(leaf(torch::randn(shape) * 4.0), leaf(torch::randn({c})), 1e-5, 1e-6,
                             "shape " + c10::str(c10::IntArrayRef(shape)));
  }
}

TEST(BiasGelu, SaturatesLikeTheReferenceFarOutInBothTails) {
  auto h = leaf(torch::tensor({-200.f, -30.f, -9.f, -5.f, -1e-3f, 0.f, 1e-3f, 5.f, 9.f, 30.f, 200.f}));
  auto bias = leaf(torch::zeros({11}));
  expect_matches_reference(h, bias, 1e-5, 1e-6, "tails");
  auto y = bias_gelu_cpu(h, bias);
  EXPECT_EQ(y[0].item<float>(), 0.f);
  EXPECT_EQ(y[10].item<float>(), 200.f);
}

TEST(BiasGelu, Bf16InputAndOutput) {
  // What fc1 gives the kernel under bf16 autocast: a bf16 projection and the fp32 bias;
  // the output in bf16, agreement to bf16's resolution.
  torch::manual_seed(1);
  expect_matches_reference(leaf((torch::randn({3, 9, 40}) * 3.0).to(torch::kBFloat16)), leaf(torch::randn({40})),
                           1e-2, 1e-2, "bf16");
}

TEST(BiasGelu, GradientsDoNotDependOnTheThreadCount) {
  // The bias gradient is summed over rows in fixed chunks: the same bits with 1 thread
  // and with 2.
  torch::manual_seed(3);
  auto h = leaf(torch::randn({8, 50, 48})), bias = leaf(torch::randn({48}));
  const int before = at::get_num_threads();
  std::vector<std::vector<torch::Tensor>> grads;
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    auto y = bias_gelu_cpu(h, bias);
    torch::manual_seed(4);
    grads.push_back(torch::autograd::grad({y}, {h, bias}, {torch::randn_like(y)}));
  }
  at::set_num_threads(before);
  for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_TRUE(torch::equal(grads[0][i], grads[1][i])) << i;
}

TEST(BiasGelu, RefusesWhatItDoesNotServe) {
  auto h = torch::randn({2, 3, 4}), b = torch::zeros({4});
  EXPECT_TRUE(bias_gelu_cpu_supports(h, b));
  EXPECT_FALSE(bias_gelu_cpu_supports(h, torch::zeros({5})));                  // bias width
  EXPECT_FALSE(bias_gelu_cpu_supports(h, torch::Tensor()));                    // no bias
  EXPECT_FALSE(bias_gelu_cpu_supports(h.to(torch::kDouble), b));              // dtype
  EXPECT_FALSE(bias_gelu_cpu_supports(h, b.to(torch::kBFloat16)));            // bf16 bias
  EXPECT_FALSE(bias_gelu_cpu_supports(torch::randn({0, 4}), b));              // empty
  EXPECT_THROW(bias_gelu_cpu(h, torch::zeros({5})), c10::Error);
}

TEST(BiasGelu, MlpFusedAgreesWithReference) {
  // The MLP's output and every gradient under runtime.kernels=fused against reference on
  // the same weights: 1e-5 relative in fp32, 2e-2 under bf16 autocast.
  torch::manual_seed(5);
  Mlp mlp(MlpOptions(24, 40));
  auto x_in = torch::randn({3, 7, 24});
  for (bool bf16 : {false, true}) {
    if (bf16) compat::set_autocast(c10::DeviceType::CPU, true, at::kBFloat16);
    std::vector<torch::Tensor> outs;
    std::vector<std::vector<torch::Tensor>> grads;
    for (auto mode : {KernelMode::Fused, KernelMode::Reference}) {
      KernelModeScope scope(mode);
      mlp->zero_grad();
      auto x = leaf(x_in);
      auto y = mlp(x);
      torch::manual_seed(6);
      (y.to(torch::kFloat) * torch::randn(y.sizes())).sum().backward();
      outs.push_back(y.detach().to(torch::kFloat));
      std::vector<torch::Tensor> g = {x.grad()};
      for (const auto& p : mlp->parameters()) g.push_back(p.grad().detach().clone());
      grads.push_back(g);
    }
    if (bf16) {
      compat::set_autocast(c10::DeviceType::CPU, false, at::kBFloat16);
      compat::clear_autocast_cache();
    }
    const double tol = bf16 ? 2e-2 : 1e-5;
    EXPECT_LE(relative_error(outs[0], outs[1]), tol) << (bf16 ? "bf16" : "fp32") << ": output";
    for (size_t i = 0; i < grads[0].size(); ++i)
      EXPECT_LE(relative_error(grads[0][i], grads[1][i]), tol) << (bf16 ? "bf16" : "fp32") << ": gradient " << i;
  }
}
