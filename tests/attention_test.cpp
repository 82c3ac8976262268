#include <gtest/gtest.h>

#include <set>
#include <torch/torch.h>

#include <cmath>

#include "core/errors.h"
#include "core/runtime.h"
#include "core/torch_compat.h"
#include "layers/attention_kernel.h"
#include "layers/attention.h"
#include "layers/init.h"
#include "layers/mlp.h"
#include "layers/patch_embed.h"
#include "layers/transformer_block.h"
#include "test_util.h"

using namespace biaslab;

TEST(Attention, PermutationEquivariantWithoutPositions) {
  torch::manual_seed(0);
  Attention attn(AttentionOptions(16, 4));
  auto x = torch::randn({2, 7, 16});
  auto perm = torch::randperm(7, torch::kLong);
  auto lhs = attn(x.index_select(1, perm));
  auto rhs = attn(x).index_select(1, perm);
  EXPECT_TRUE(torch::allclose(lhs, rhs, 1e-5, 1e-6));
  // The whole pre-norm block is too.
  TransformerBlock block(TransformerBlockOptions(16, 4).mlp_ratio(2.0));
  EXPECT_TRUE(torch::allclose(block(x.index_select(1, perm)), block(x).index_select(1, perm), 1e-5, 1e-6));
}

TEST(Attention, RowsAreDistributions) {
  torch::manual_seed(1);
  Attention attn(AttentionOptions(8, 2));
  attn->keep_attention(true);
  attn(torch::randn({3, 5, 8}));
  auto a = attn->last_attention();
  EXPECT_EQ(a.sizes(), (torch::IntArrayRef{3, 2, 5, 5}));
  EXPECT_TRUE(torch::allclose(a.sum(-1), torch::ones({3, 2, 5})));
  EXPECT_TRUE((a >= 0).all().item<bool>());
}

TEST(Attention, IdenticalTokensAttendUniformly) {
  Attention attn(AttentionOptions(8, 2));
  attn->keep_attention(true);
  auto x = torch::randn({1, 1, 8}).expand({1, 6, 8});
  auto y = attn(x);
  EXPECT_TRUE(torch::allclose(attn->last_attention(), torch::full({1, 2, 6, 6}, 1.0 / 6.0)));
  // Averaging identical values returns that value: every output token is the same.
  EXPECT_TRUE(torch::allclose(y, y.select(1, 0).unsqueeze(1).expand_as(y), 1e-6, 1e-6));
}

TEST(Attention, MatchesTheDefinitionHeadByHead) {
  torch::manual_seed(2);
  const int64_t dim = 8, heads = 2, d = dim / heads, n = 4;
  Attention attn(AttentionOptions(dim, heads));
  auto x = torch::randn({1, n, dim});
  auto qkv = attn->qkv(x)[0];  // (N, 3C): [q | k | v], heads contiguous in each
  std::vector<torch::Tensor> outs;
  for (int64_t h = 0; h < heads; ++h) {
    auto q = qkv.narrow(1, h * d, d), k = qkv.narrow(1, dim + h * d, d), v = qkv.narrow(1, 2 * dim + h * d, d);
    auto a = torch::softmax(torch::mm(q, k.t()) / std::sqrt(double(d)), 1);
    outs.push_back(torch::mm(a, v));
  }
  auto ref = attn->proj(torch::cat(outs, 1));
  EXPECT_TRUE(torch::allclose(attn(x)[0], ref, 1e-5, 1e-6));
}

TEST(Attention, RejectsIndivisibleHeads) { EXPECT_THROW(Attention(AttentionOptions(10, 3)), c10::Error); }

TEST(Layers, PatchEmbedTokensInRowMajorOrder) {
  PatchEmbed pe(PatchEmbedOptions(8, 4, 1, 3));
  EXPECT_EQ(pe->num_patches(), 4);
  auto x = torch::zeros({1, 1, 8, 8});
  x.index_put_({0, 0, torch::indexing::Slice(0, 4), torch::indexing::Slice(4, 8)}, 1.0);  // top-right patch
  auto t = pe(x) - pe(torch::zeros({1, 1, 8, 8}));  // remove the bias
  EXPECT_EQ(t.sizes(), (torch::IntArrayRef{1, 4, 3}));
  EXPECT_GT(t[0][1].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(t[0][0].abs().sum().item<double>(), 0.0);
  EXPECT_THROW(PatchEmbed(PatchEmbedOptions(10, 4, 1, 3)), c10::Error);
}

TEST(Layers, MlpShape) {
  Mlp mlp(MlpOptions(6, 12));
  EXPECT_EQ(mlp(torch::randn({2, 3, 6})).sizes(), (torch::IntArrayRef{2, 3, 6}));
  EXPECT_EQ(mlp->fc1->weight.sizes(), (torch::IntArrayRef{12, 6}));
}

TEST(Layers, TruncNormalStaysInsideTwoSigma) {
  auto t = torch::empty({100000});
  trunc_normal_(t, 0.02);
  EXPECT_LE(t.abs().max().item<double>(), 0.04 + 1e-9);
  // Std of N(0, s^2) truncated at 2s is 0.8796 s.
  EXPECT_NEAR(t.std().item<double>(), 0.02 * 0.8796, 0.0005);
  EXPECT_NEAR(t.mean().item<double>(), 0.0, 0.0005);
}

TEST(Attention, LocalWindowRestrictsToTheNeighbourhood) {
  torch::manual_seed(3);
  // 4x4 patch grid after one class token; 3x3 windows.
  Attention local(AttentionOptions(8, 2).window(3).grid(4).prefix_tokens(1));
  local->keep_attention(true);
  local(torch::randn({2, 17, 8}));
  auto a = local->last_attention();  // (2, 2, 17, 17)
  auto allowed = local_attention_mask(4, 3, 1);
  EXPECT_EQ(a.masked_select(allowed.logical_not()).abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::allclose(a.sum(-1), torch::ones({2, 2, 17})));
  // Patch (0, 0) sees the class token and patches (0,0), (0,1), (1,0), (1,1).
  EXPECT_EQ(allowed[1].sum().item<int64_t>(), 5);
  // An interior patch (1, 1) sees the class token and 9 patches; the class token sees all.
  EXPECT_EQ(allowed[1 + 5].sum().item<int64_t>(), 10);
  EXPECT_EQ(allowed[0].sum().item<int64_t>(), 17);
}

TEST(Attention, WindowCoveringTheGridEqualsGlobal) {
  torch::manual_seed(4);
  Attention global(AttentionOptions(8, 2));
  Attention local(AttentionOptions(8, 2).window(7).grid(4).prefix_tokens(1));
  test::copy_shared_parameters(*global, *local);
  auto x = torch::randn({2, 17, 8});
  EXPECT_TRUE(torch::allclose(local(x), global(x), 1e-6, 1e-6));
}

TEST(Attention, GpsaStartsAsAConvolutionOverItsKernel) {
  // 9 heads = a 3x3 kernel; with a sharp locality every head's positional attention
  // picks out one neighbour: head h -> offset (h % 3 - 1, h / 3 - 1).
  torch::manual_seed(6);
  Attention gpsa(AttentionOptions(18, 9).grid(5).gated_positional(true).locality_strength(20.0));
  auto pos = gpsa->positional_attention(torch::kCPU);  // (9, 25, 25)
  EXPECT_TRUE(torch::allclose(pos.sum(-1), torch::ones({9, 25}), 1e-5, 1e-5));
  const int64_t r = 2, c = 2, query = r * 5 + c;  // the centre patch
  for (int64_t h = 0; h < 9; ++h) {
    const int64_t dx = h % 3 - 1, dy = h / 3 - 1;
    const int64_t key = (r + dy) * 5 + (c + dx);
    EXPECT_GT(pos[h][query][key].item<double>(), 0.99) << "head " << h;
  }
  // The layer mixes content and position by the gate sigmoid(1) and stays a distribution.
  gpsa->keep_attention(true);
  gpsa(torch::randn({2, 25, 18}));
  auto a = gpsa->last_attention();
  EXPECT_TRUE(torch::allclose(a.sum(-1), torch::ones({2, 9, 25}), 1e-5, 1e-5));
  EXPECT_GT(a[0][4][query][query].item<double>(), 1.0 / (1.0 + std::exp(-1.0)) - 1e-4);  // centre head
  // GPSA with a class token, a window or relative bias is refused.
  EXPECT_THROW(Attention(AttentionOptions(8, 4).grid(3).prefix_tokens(1).gated_positional(true)), c10::Error);
  EXPECT_THROW(Attention(AttentionOptions(8, 4).gated_positional(true)), c10::Error);
}

TEST(Attention, GpsaGateOfZeroIsPlainAttention) {
  torch::manual_seed(7);
  Attention gpsa(AttentionOptions(8, 4).grid(3).gated_positional(true));
  Attention plain(AttentionOptions(8, 4));
  {
    torch::NoGradGuard g;
    gpsa->gating_param.fill_(-1e4);  // sigmoid -> 0
  }
  test::copy_shared_parameters(*gpsa, *plain);
  auto x = torch::randn({2, 9, 8});
  EXPECT_TRUE(torch::allclose(gpsa(x), plain(x), 1e-6, 1e-6));
}

// Whether a matches b: elementwise (allclose) when tol_norm is 0, else by the relative
// Frobenius error ||a - b|| / ||b|| <= tol_norm.
static ::testing::AssertionResult tensors_agree(const torch::Tensor& a_in, const torch::Tensor& b_in, double rtol,
                                                double atol, double tol_norm) {
  const auto a = a_in.to(torch::kFloat), b = b_in.to(torch::kFloat);
  const double max_diff = (a - b).abs().max().item<double>();
  const double rel = (a - b).norm().item<double>() / std::max(b.norm().item<double>(), 1e-30);
  const bool ok = tol_norm > 0 ? rel <= tol_norm : torch::allclose(a, b, rtol, atol);
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max diff " << max_diff << ", relative error " << rel;
}

// Compares a fused-path module with the manual path on the same weights and input:
// outputs, the input's gradient and every parameter's gradient.
static void expect_paths_agree(const AttentionOptions& o, const torch::Tensor& x_in, double rtol, double atol,
                               const std::string& what, double tol_norm = 0.0) {
  Attention fused(AttentionOptions(o).fused(true)), manual(AttentionOptions(o).fused(false));
  test::copy_shared_parameters(*fused, *manual);
  auto xf = x_in.detach().clone().requires_grad_(true), xm = x_in.detach().clone().requires_grad_(true);
  auto yf = fused(xf), ym = manual(xm);
  EXPECT_TRUE(tensors_agree(yf, ym, rtol, atol, tol_norm)) << what << ": forward";
  auto w = torch::randn_like(yf);
  (yf * w).sum().backward();
  (ym * w).sum().backward();
  EXPECT_TRUE(tensors_agree(xf.grad(), xm.grad(), rtol, atol, tol_norm)) << what << ": input gradient";
  auto gm = manual->named_parameters();
  for (const auto& p : fused->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << what << " " << p.key();
    EXPECT_TRUE(tensors_agree(p.value().grad(), gm[p.key()].grad(), rtol, atol, tol_norm))
        << what << ": " << p.key() << " gradient";
  }
}

// The score factor: (1 / sqrt(d) with attn_scale sqrt_dk, else 1) / temperature.
TEST(Attention, ScoreScaleAndTemperatureMatchTheDefinition) {
  torch::manual_seed(21);
  const int64_t dim = 8, heads = 2, d = dim / heads, n = 5;
  for (const auto& [by_sqrt_dk, tau] : {std::pair{true, 1.0}, std::pair{true, 0.25}, std::pair{false, 1.0},
                                        std::pair{false, 3.0}}) {
    Attention attn(AttentionOptions(dim, heads).scale_by_sqrt_dk(by_sqrt_dk).temperature(tau));
    auto x = torch::randn({1, n, dim});
    auto qkv = attn->qkv(x)[0];
    std::vector<torch::Tensor> outs;
    const double factor = (by_sqrt_dk ? 1.0 / std::sqrt(double(d)) : 1.0) / tau;
    EXPECT_DOUBLE_EQ(attn->options.score_scale(d), factor);
    for (int64_t h = 0; h < heads; ++h) {
      auto q = qkv.narrow(1, h * d, d), k = qkv.narrow(1, dim + h * d, d), v = qkv.narrow(1, 2 * dim + h * d, d);
      outs.push_back(torch::mm(torch::softmax(torch::mm(q, k.t()) * factor, 1), v));
    }
    EXPECT_TRUE(torch::allclose(attn(x)[0], attn->proj(torch::cat(outs, 1)), 1e-5, 1e-6))
        << "sqrt_dk " << by_sqrt_dk << " temperature " << tau;
  }
  // Every path applies it: biaslab's kernel and LibTorch's (2.x) against the manual one.
  KernelModeScope scope(KernelMode::Fused);
  for (const auto& o : {AttentionOptions(16, 4).temperature(0.3), AttentionOptions(16, 4).scale_by_sqrt_dk(false),
                        AttentionOptions(16, 4).temperature(2.0).window(3).grid(4).prefix_tokens(1)})
    expect_paths_agree(o, torch::randn({2, 17, 16}), 1e-5, 1e-5,
                       "temperature " + std::to_string(o.temperature()) + " sqrt_dk " + std::to_string(o.scale_by_sqrt_dk()));
}

// The claim behind the sqrt(d) scaling, at initialisation: with unit-variance q and k
// components (inputs N(0, 1), projection rows of unit norm), a query's scores over
// the keys have variance ~ d unscaled and ~ 1 divided by sqrt(d). Read from the kept
// softmax weights: log A_ij = s_ij - lse_i, so their spread over j is the scores'.
TEST(Attention, ScoreVarianceIsTheHeadWidthUnlessScaled) {
  torch::NoGradGuard no_grad;
  for (const int64_t d : {8, 32, 64}) {
    const int64_t heads = 2, dim = heads * d, n = 128;
    for (const bool by_sqrt_dk : {true, false}) {
      torch::manual_seed(30 + d);
      Attention attn(AttentionOptions(dim, heads).scale_by_sqrt_dk(by_sqrt_dk).qkv_bias(false));
      attn->to(torch::kDouble);
      // Rows of unit norm: each q and k component has variance exactly 1 over the inputs.
      auto w = torch::randn_like(attn->qkv->weight);
      attn->qkv->weight.copy_(w / w.norm(2, {1}, true));
      attn->keep_attention(true);
      attn(torch::randn({4, n, dim}, torch::kDouble));
      const auto spread = attn->last_attention().log().var(-1).mean().item<double>();  // over keys, averaged
      const double expected = by_sqrt_dk ? 1.0 : double(d);
      // Sampling error: 4 x 2 x 128 queries of 128 scores each; a 15% band.
      EXPECT_NEAR(spread / expected, 1.0, 0.15) << "d " << d << " sqrt_dk " << by_sqrt_dk << ": " << spread;
    }
  }
}

TEST(Attention, FusedAndManualPathsAgree) {
  // runtime.kernels fused: biaslab's CPU kernel (layers/attention_kernel.h), on every
  // LibTorch; auto: the same kernel in fp32 on the CPU (LibTorch's own fused attention
  // is tested on its own below).
  // Global, local window, relative bias, window + relative; with a class token.
  std::vector<std::string> modes = {"fused"};
  if (compat::has_fused_attention()) modes.push_back("auto");
  for (const auto& mode : modes) {
    KernelModeScope scope(mode == "fused" ? KernelMode::Fused : KernelMode::Auto);
    torch::manual_seed(8);
    for (const auto& o : {AttentionOptions(16, 4), AttentionOptions(16, 4).window(3).grid(4).prefix_tokens(1),
                          AttentionOptions(16, 4).relative_position(true).grid(4).prefix_tokens(1),
                          AttentionOptions(16, 4).relative_position(true).window(3).grid(4).prefix_tokens(1)}) {
      expect_paths_agree(o, torch::randn({3, 17, 16}), 1e-5, 1e-5,
                         mode + ": window " + std::to_string(o.window()) + " relative " +
                             std::to_string(o.relative_position()));
    }
  }
}

TEST(Attention, FusedKernelMatchesManualOnRandomShapes) {
  // fp32: agreement to 1e-5 relative / 1e-5 absolute, forward and backward, over head
  // counts, head widths (including ones that are not a multiple of the vector width),
  // grids, windows, prefix tokens and batch sizes drawn at random.
  KernelModeScope scope(KernelMode::Fused);
  torch::manual_seed(11);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t heads = 1 + torch::randint(4, {1}).item<int64_t>();
    const int64_t width = heads * (1 + torch::randint(12, {1}).item<int64_t>());
    const int64_t grid = 2 + torch::randint(5, {1}).item<int64_t>();
    const int64_t prefix = torch::randint(2, {1}).item<int64_t>();
    const int64_t batch = 1 + torch::randint(3, {1}).item<int64_t>();
    const int64_t kind = trial % 4;  // global, window, relative, both
    auto o = AttentionOptions(width, heads).grid(grid).prefix_tokens(prefix);
    if (kind == 1 || kind == 3) o.window(grid > 3 ? 3 : 1);
    if (kind >= 2) o.relative_position(true);
    const std::string what = "trial " + std::to_string(trial) + ": heads " + std::to_string(heads) + " width " +
                             std::to_string(width) + " grid " + std::to_string(grid) + " prefix " +
                             std::to_string(prefix) + " kind " + std::to_string(kind);
    expect_paths_agree(o, torch::randn({batch, prefix + grid * grid, width}) * 2.0, 1e-5, 1e-5, what);
  }
}

TEST(Attention, FusedKernelInBf16) {
  // Under bf16 autocast the manual path also rounds the scores and the weights to bf16
  // where the kernel keeps fp32: agreement to bf16's resolution, relative error 2e-2.
  KernelModeScope scope(KernelMode::Fused);
  torch::manual_seed(12);
  auto o = AttentionOptions(32, 4).relative_position(true).window(3).grid(4).prefix_tokens(1);
  compat::set_autocast(c10::DeviceType::CPU, true, at::kBFloat16);
  expect_paths_agree(o, torch::randn({2, 17, 32}), 0, 0, "bf16 autocast", 2e-2);
  compat::set_autocast(c10::DeviceType::CPU, false, at::kBFloat16);
  compat::clear_autocast_cache();
}

namespace {

// Whether the autograd graph behind `out` has a node whose name contains `name`.
bool graph_has_node(const torch::Tensor& out, const std::string& name) {
  // Raw pointers (the graph lives as long as `out`): LibTorch 1.13 holds nodes in
  // shared_ptr, 2.x's edges in intrusive_ptr.
  std::vector<torch::autograd::Node*> todo{out.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (!node || !seen.insert(node).second) continue;
    if (node->name().find(name) != std::string::npos) return true;
    for (const auto& edge : node->next_edges()) todo.push_back(edge.function.get());
  }
  return false;
}

}  // namespace

TEST(Attention, KernelModeReferenceUsesTheManualPath) {
  torch::manual_seed(13);
  auto o = AttentionOptions(16, 4).relative_position(true).grid(3).prefix_tokens(1);
  Attention fused(AttentionOptions(o).fused(true)), manual(AttentionOptions(o).fused(false));
  test::copy_shared_parameters(*fused, *manual);
  auto x = torch::randn({2, 10, 16});
  {
    KernelModeScope scope(KernelMode::Reference);
    EXPECT_TRUE(torch::equal(fused(x), manual(x)));  // the very same operators
  }
  KernelModeScope scope(KernelMode::Fused);
  // The kernel ran: its autograd node is in the output's graph (not merely "the result
  // rounds differently", which another fused path would also do).
  auto xg = x.clone().requires_grad_(true);
  EXPECT_TRUE(graph_has_node(fused(xg), "AttentionFunction"));
  EXPECT_FALSE(graph_has_node(manual(xg), "AttentionFunction"));
  {
    KernelModeScope reference(KernelMode::Reference);
    EXPECT_FALSE(graph_has_node(fused(xg), "AttentionFunction"));
  }
  EXPECT_THROW(set_kernel_mode("fast"), ConfigError);
}

TEST(Attention, KernelOnItsOwnAgainstTheDefinition) {
  // attention_cpu directly, with an arbitrary differentiable bias and a random mask
  // (every row keeps at least its diagonal), against softmax(q k^T s + bias) v.
  torch::manual_seed(14);
  const int64_t b = 2, n = 9, heads = 3, d = 5, c = heads * d;
  auto qkv = torch::randn({b, n, 3 * c}, torch::requires_grad());
  auto bias = torch::randn({heads, n, n}, torch::requires_grad());
  auto mask = (torch::rand({n, n}) > 0.4) | torch::eye(n, torch::kBool);
  const double scale = 0.37;
  auto out = attention_cpu(qkv, heads, bias, mask, scale);
  auto parts = qkv.view({b, n, 3, heads, d}).permute({2, 0, 3, 1, 4}).unbind(0);
  auto logits = torch::matmul(parts[0], parts[1].transpose(-2, -1)) * scale + bias;
  logits = logits.masked_fill(mask.logical_not(), -INFINITY);
  auto ref = torch::matmul(logits.softmax(-1), parts[2]).transpose(1, 2).reshape({b, n, c});
  EXPECT_TRUE(torch::allclose(out, ref, 1e-5, 1e-6)) << (out - ref).abs().max().item<float>();
  auto w = torch::randn_like(out);
  auto g_out = torch::autograd::grad({(out * w).sum()}, {qkv, bias});
  auto g_ref = torch::autograd::grad({(ref * w).sum()}, {qkv, bias});
  EXPECT_TRUE(torch::allclose(g_out[0], g_ref[0], 1e-5, 1e-6)) << (g_out[0] - g_ref[0]).abs().max().item<float>();
  EXPECT_TRUE(torch::allclose(g_out[1], g_ref[1], 1e-5, 1e-6)) << (g_out[1] - g_ref[1]).abs().max().item<float>();
  // Masked pairs get no bias gradient; bad shapes are refused.
  EXPECT_EQ(g_out[1].masked_select(mask.logical_not().expand({heads, n, n})).abs().max().item<float>(), 0.f);
  EXPECT_THROW(attention_cpu(qkv, 4, {}, {}, scale), c10::Error);
  EXPECT_THROW(attention_cpu(qkv, heads, torch::zeros({heads, n, n + 1}), {}, scale), c10::Error);
}

TEST(Attention, LibTorchFusedAttentionAgainstTheDefinition) {
  // compat::fused_attention (2.x's scaled_dot_product_attention), which `auto` uses on
  // CUDA and `fused` on the CPU where biaslab's kernel does not apply: with no mask, a
  // bool mask and an additive one, against softmax(q k^T / sqrt(d) + mask) v.
  if (!compat::has_fused_attention()) GTEST_SKIP() << "LibTorch " << compat::torch_version() << " has no fused attention";
  torch::manual_seed(15);
  const int64_t b = 2, heads = 3, n = 7, d = 4;
  auto q = torch::randn({b, heads, n, d}), k = torch::randn({b, heads, n, d}), v = torch::randn({b, heads, n, d});
  auto allowed = (torch::rand({n, n}) > 0.4) | torch::eye(n, torch::kBool);
  auto additive = torch::randn({heads, n, n});
  for (int kind = 0; kind < 3; ++kind) {
    const torch::Tensor mask = kind == 0 ? torch::Tensor() : kind == 1 ? allowed : additive;
    auto logits = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(d));
    if (kind == 1) logits = logits.masked_fill(allowed.logical_not(), -INFINITY);
    if (kind == 2) logits = logits + additive;
    auto ref = torch::matmul(logits.softmax(-1), v);
    auto out = compat::fused_attention(q, k, v, mask, 0.0);
    EXPECT_TRUE(torch::allclose(out, ref, 1e-5, 1e-5)) << "mask kind " << kind << ": "
                                                       << (out - ref).abs().max().item<float>();
  }
}

TEST(Attention, RunsOnTheGpu_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  torch::manual_seed(9);
  Attention cpu(AttentionOptions(16, 4).window(3).grid(4).prefix_tokens(1));
  Attention gpu(AttentionOptions(16, 4).window(3).grid(4).prefix_tokens(1));
  test::copy_shared_parameters(*cpu, *gpu);
  gpu->to(torch::kCUDA);
  auto x = torch::randn({2, 17, 16});
  EXPECT_TRUE(torch::allclose(gpu(x.to(torch::kCUDA)).cpu(), cpu(x), 1e-4, 1e-4));
}
