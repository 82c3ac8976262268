#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/torch_compat.h"
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

TEST(Attention, FusedAndManualPathsAgree) {
  if (!compat::has_fused_attention())
    GTEST_SKIP() << "LibTorch " << compat::torch_version() << " has no fused attention (2.0+); only the manual path exists";
  torch::manual_seed(8);
  // Global, local window, relative bias, window + relative; with a class token.
  for (const auto& o : {AttentionOptions(16, 4), AttentionOptions(16, 4).window(3).grid(4).prefix_tokens(1),
                        AttentionOptions(16, 4).relative_position(true).grid(4).prefix_tokens(1),
                        AttentionOptions(16, 4).relative_position(true).window(3).grid(4).prefix_tokens(1)}) {
    Attention fused(AttentionOptions(o).fused(true)), manual(AttentionOptions(o).fused(false));
    test::copy_shared_parameters(*fused, *manual);
    auto x = torch::randn({3, 17, 16});
    auto yf = fused(x), ym = manual(x);
    EXPECT_TRUE(torch::allclose(yf, ym, 1e-5, 1e-5)) << "window " << o.window() << " relative " << o.relative_position();
    // Gradients too, including the relative-position table that reaches the kernel as a mask.
    auto w = torch::randn_like(yf);
    (yf * w).sum().backward();
    (ym * w).sum().backward();
    auto gm = manual->named_parameters();
    for (const auto& p : fused->named_parameters()) {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      EXPECT_TRUE(torch::allclose(p.value().grad(), gm[p.key()].grad(), 1e-4, 1e-5)) << p.key();
    }
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
