#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/attention_stats.h"
#include "analysis/probes.h"
#include "analysis/receptive_field.h"
#include "config/loader.h"
#include "data/transforms.h"
#include "models/registry.h"
#include "models/vit.h"

using namespace biaslab;

namespace {

std::shared_ptr<ViTImpl> tiny_vit(std::vector<std::string> sets, const std::string& preset = "vit_lite_p4") {
  std::vector<std::string> all = {"data.image_size=16", "data.channels=1", "data.num_classes=3", "data.mean=[0.5]",
                                  "data.std=[0.5]", "data.class_names=[]", "model.embed_dim=16", "model.depth=2",
                                  "model.num_heads=4", "model.patch_size=2"};
  all.insert(all.end(), sets.begin(), sets.end());
  const Config cfg =
      load_config_text("model: {preset: " + preset + "}\ndata: {preset: fashion_mnist}\n", "tiny.yaml", all);
  auto model = std::dynamic_pointer_cast<ViTImpl>(build_model(cfg.model, input_spec(cfg.data)));
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.3);  // attention far from uniform
  return model;
}

}  // namespace

// Uniform attention over a grid: the mean distance is the mean Euclidean distance over all
// pairs of patches (computed here by loops), whatever the prefix tokens get.
TEST(AttentionStats, UniformAttentionGivesTheAnalyticMeanDistance) {
  const int64_t g = 5, p = g * g, prefix = 1, heads = 2;
  auto attn = torch::full({3, heads, prefix + p, prefix + p}, 1.0 / double(prefix + p));
  double sum = 0;
  for (int64_t a = 0; a < p; ++a)
    for (int64_t b = 0; b < p; ++b) sum += std::hypot(double(a / g - b / g), double(a % g - b % g));
  const double expected = 4.0 * sum / double(p * p);  // 4 px per patch
  auto d = mean_attention_distance(attn, g, prefix, 4.0);
  ASSERT_EQ(d.size(0), heads);
  for (int64_t h = 0; h < heads; ++h) EXPECT_NEAR(d[h].item<double>(), expected, 1e-9);
  // Each query attending only to itself: distance 0.
  auto self = torch::zeros({1, 1, p, p});
  self[0][0] = torch::eye(p);
  EXPECT_EQ(mean_attention_distance(self, g, 0, 4.0).item<double>(), 0.0);
}

// A ViT with 3 x 3 local windows: every head's mean distance is at most the largest
// distance inside the window (the corner, sqrt(2) patches), and the rows of every
// block's attention sum to 1.
TEST(AttentionStats, LocalWindowViTStaysInsideItsWindow) {
  torch::manual_seed(0);
  auto vit = tiny_vit({"model.attn_window=3"});
  const auto attn = collect_attention(*vit, torch::randn({4, 1, 16, 16}));
  ASSERT_EQ(attn.size(), 2u);
  for (const auto& a : attn) {
    EXPECT_EQ(a.sizes(), (torch::IntArrayRef{4, 4, 65, 65}));
    EXPECT_TRUE(torch::allclose(a.sum(-1), torch::ones({4, 4, 65}), 1e-5, 1e-5));
    const auto d = mean_attention_distance(a, 8, 1, 2.0);
    EXPECT_LE(d.max().item<double>(), std::sqrt(2.0) * 2.0 + 1e-9);
    EXPECT_GT(d.min().item<double>(), 0.0);
  }
  // Global attention on the same grid reaches further than any window head.
  torch::manual_seed(0);
  auto global = tiny_vit({});
  const auto g = collect_attention(*global, torch::randn({4, 1, 16, 16}));
  EXPECT_GT(mean_attention_distance(g[0], 8, 1, 2.0).max().item<double>(), std::sqrt(2.0) * 2.0);
}

// GPSA blocks before the class token joins have no prefix; rows still sum to 1, and
// rollout spans the last block's tokens with rows summing to 1.
TEST(AttentionStats, GpsaBlocksAndRollout) {
  torch::manual_seed(0);
  auto vit = tiny_vit({"model.gpsa_layers=1"}, "convit_lite_p4");
  const auto attn = collect_attention(*vit, torch::randn({2, 1, 16, 16}));
  EXPECT_EQ(attn[0].size(2), 64);  // patches only
  EXPECT_EQ(attn[1].size(2), 65);  // class token joined
  for (const auto& a : attn) EXPECT_TRUE(torch::allclose(a.sum(-1), torch::ones_like(a.sum(-1)), 1e-5, 1e-5));
  const auto r = attention_rollout(attn);
  EXPECT_EQ(r.sizes(), (torch::IntArrayRef{2, 65, 65}));
  EXPECT_TRUE(torch::allclose(r.sum(-1), torch::ones({2, 65}), 1e-5, 1e-5));
  // Two blocks by hand: block 0 over 2 patches (the class token joins in block 1, where
  // attention is uniform over 3 tokens); rollout = mix(A1) mix(embed(A0)), mix(A) = (A + I) / 2.
  auto a0 = torch::tensor({0.8f, 0.2f, 0.3f, 0.7f}).view({1, 1, 2, 2});
  auto a1 = torch::full({1, 1, 3, 3}, 1.0f / 3.0f);
  auto embedded = torch::tensor({1.0f, 0.0f, 0.0f, 0.0f, 0.8f, 0.2f, 0.0f, 0.3f, 0.7f}).view({3, 3});
  auto expected = torch::matmul(0.5 * a1[0][0] + 0.5 * torch::eye(3), 0.5 * embedded + 0.5 * torch::eye(3));
  EXPECT_TRUE(torch::allclose(attention_rollout({a0, a1})[0], expected, 1e-6, 1e-6));
  // Identity attention everywhere rolls out to the identity.
  EXPECT_TRUE(torch::allclose(attention_rollout({torch::eye(5).expand({1, 2, 5, 5})}), torch::eye(5).unsqueeze(0)));
}

TEST(AttentionStats, QueryKernelsAndTheirVarianceAcrossImages) {
  torch::manual_seed(0);
  auto same = torch::softmax(torch::randn({1, 2, 10, 10}), -1).expand({3, 2, 10, 10});  // 1 prefix + 3 x 3
  const auto k = query_kernel(same, 3, 1, 4);
  EXPECT_EQ(k.sizes(), (torch::IntArrayRef{3, 2, 3, 3}));
  EXPECT_TRUE(torch::allclose(k.sum({2, 3}), torch::ones({3, 2})));
  EXPECT_NEAR(kernel_variance(same, 3, 1), 0.0, 1e-15);  // the same kernel for every image: a convolution
  auto varying = torch::softmax(torch::randn({6, 2, 10, 10}), -1);
  EXPECT_GT(kernel_variance(varying, 3, 1), 0.0);
  // Accumulated over batches it is the variance over all images.
  KernelMoments m;
  m.add(varying.narrow(0, 0, 2), 3, 1);
  m.add(varying.narrow(0, 2, 4), 3, 1);
  EXPECT_NEAR(m.variance(), kernel_variance(varying, 3, 1), 1e-12);
  // Keys a window never lets a query attend (weight 0 in every image) are left out.
  auto windowed = varying.clone();
  windowed.narrow(3, 9, 1).zero_();
  windowed = windowed / windowed.sum(-1, true);
  KernelMoments w;
  w.add(windowed, 3, 1);
  const auto pw = windowed.narrow(2, 1, 9).narrow(3, 1, 8);
  const auto renorm = pw / pw.sum(-1, true);
  EXPECT_NEAR(w.variance(), renorm.to(torch::kDouble).var(0, false).mean().item<double>(), 1e-9);
}

// L stacked 3 x 3 stride-1 convolutions: the effective receptive field's support is
// exactly the theoretical 1 + 2L pixels.
TEST(ReceptiveField, StackOfConvsHasTheTheoreticalSupport) {
  torch::manual_seed(0);
  for (int64_t layers = 1; layers <= 4; ++layers) {
    torch::nn::Sequential net;
    int64_t in = 1;
    for (int64_t l = 0; l < layers; ++l) {
      net->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, 3, 3).padding(1).bias(false)));
      in = 3;
    }
    const auto erf = effective_receptive_field([&](const torch::Tensor& x) { return net->forward(x); },
                                               torch::randn({2, 1, 21, 21}));
    EXPECT_EQ(erf.sizes(), (torch::IntArrayRef{21, 21}));
    EXPECT_EQ(support_side(erf), 1 + 2 * layers) << layers << " layers";
    EXPECT_LE(erf_side(erf, 0.9), 1 + 2 * layers);
  }
}

// A stride-2 layer: the central unit j of the map sits over pixel 2j, not the image
// centre; the squares are centred on the ERF itself.
TEST(ReceptiveField, StridedUnitsAreMeasuredWhereTheyLook) {
  torch::manual_seed(0);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 2, 3).stride(2).padding(1).bias(false));
  const auto erf = effective_receptive_field([&](const torch::Tensor& x) { return conv->forward(x); },
                                             torch::randn({2, 1, 14, 14}));  // map 7 x 7, unit (3, 3)
  EXPECT_EQ(erf_centre(erf), (std::pair<int64_t, int64_t>{6, 6}));  // pixels 5..7
  EXPECT_EQ(support_side(erf), 3);
  EXPECT_EQ(erf_side(erf, 1.0), 3);
}

TEST(ReceptiveField, SquaresHoldingAShareOfTheMass) {
  auto off = torch::zeros({9, 9});
  off[2][6] = 1.0;
  EXPECT_EQ(erf_side(off, 0.5), 1);
  EXPECT_EQ(erf_centre(off), (std::pair<int64_t, int64_t>{2, 6}));
  auto point = torch::zeros({9, 9});
  point[4][4] = 1.0;
  EXPECT_EQ(erf_side(point, 0.5), 1);
  EXPECT_EQ(support_side(point), 1);
  auto flat = torch::ones({9, 9});
  EXPECT_EQ(erf_side(flat, 1.0), 9);
  EXPECT_EQ(erf_side(flat, 0.1), 3);  // 9 of 81 pixels
  EXPECT_EQ(support_side(flat), 9);
}

// The feature map of a ViT is its patch tokens on their grid; its ERF covers the image.
TEST(ReceptiveField, ViTFeatureMapIsThePatchGrid) {
  torch::manual_seed(0);
  auto vit = tiny_vit({});
  vit->eval();
  const auto map = feature_map_fn(*vit)(torch::randn({2, 1, 16, 16}));
  EXPECT_EQ(map.sizes(), (torch::IntArrayRef{2, 16, 8, 8}));
  const auto erf = effective_receptive_field(feature_map_fn(*vit), torch::randn({2, 1, 16, 16}));
  EXPECT_EQ(support_side(erf), 16);  // global attention: every pixel matters
}

// Entropy and score variance of known rows: uniform over k keys gives log k and 0, a
// one-hot row 0 (and no variance: one key attended), softmax(s) gives back var(s).
TEST(AttentionStats, EntropyAndScoreVarianceOfKnownRows) {
  auto a = torch::zeros({1, 3, 4, 4}, torch::kDouble);
  a.select(1, 0).fill_(0.25);                        // head 0: uniform over 4 keys
  a.select(1, 1).select(2, 2).fill_(1.0);            // head 1: one-hot on key 2
  const auto s = torch::tensor({0.5, -1.0, 2.0, 0.0}, torch::kDouble);
  a.select(1, 2).copy_(torch::softmax(s, 0).expand({4, 4}));  // head 2: softmax of known scores
  const auto entropy = attention_entropy(a);
  EXPECT_NEAR(entropy[0].item<double>(), std::log(4.0), 1e-12);
  EXPECT_NEAR(entropy[1].item<double>(), 0.0, 1e-12);
  const auto p = torch::softmax(s, 0);
  EXPECT_NEAR(entropy[2].item<double>(), -(p * p.log()).sum().item<double>(), 1e-12);
  const auto var = score_variance(a);
  EXPECT_NEAR(var[0].item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(var[1].item<double>(), 0.0, 1e-12);
  EXPECT_NEAR(var[2].item<double>(), s.var().item<double>(), 1e-12);  // sample variance, as score_variance
  // Keys a query cannot attend (weight 0: outside a window) are left out.
  auto masked = torch::zeros({1, 1, 1, 6}, torch::kDouble);
  masked.narrow(3, 0, 4).copy_(torch::softmax(s, 0).view({1, 1, 1, 4}));
  EXPECT_NEAR(score_variance(masked)[0].item<double>(), s.var().item<double>(), 1e-12);
  EXPECT_NEAR(attention_entropy(masked)[0].item<double>(), entropy[2].item<double>(), 1e-12);
}


// The probes' transformations on known images, and the invariance they exist to show:
// a ViT without positions and with mean pooling gives the same logits for its tokens in
// any order (a tile shuffle of patch-sized tiles), one with learned positions does not.
TEST(Probes, ShiftShuffleAndTheInvarianceOfAPositionFreeViT) {
  auto img = torch::arange(16, torch::kUInt8).view({1, 1, 4, 4});
  const auto right = shift_images(img, 1, 0);
  EXPECT_EQ(right[0][0][0][0].item<int>(), 0);   // vacated column
  EXPECT_EQ(right[0][0][0][1].item<int>(), 0);   // was (0, 0)
  EXPECT_EQ(right[0][0][2][3].item<int>(), 10);  // was (2, 2)
  const auto up = shift_images(img, 0, -1);
  EXPECT_EQ(up[0][0][0][0].item<int>(), 4);
  EXPECT_EQ(up[0][0][3][0].item<int>(), 0);
  EXPECT_TRUE(torch::equal(shift_images(img, 0, 0), img));
  // 2 x 2 tiles of a 4 x 4 image: tile 0 of the output is tile 3 of the input.
  const auto shuffled = shuffle_blocks(img, 2, {3, 2, 1, 0});
  EXPECT_EQ(shuffled[0][0][0][0].item<int>(), 10);
  EXPECT_EQ(shuffled[0][0][3][3].item<int>(), 5);
  EXPECT_TRUE(torch::equal(shuffle_blocks(img, 2, {0, 1, 2, 3}), img));
  const auto perm = block_permutation(49, 0);
  EXPECT_FALSE(std::is_sorted(perm.begin(), perm.end()));
  EXPECT_EQ(std::set<int64_t>(perm.begin(), perm.end()).size(), 49u);
  // Rotation by 0 at scale 1 changes nothing; by 90 degrees moves a corner to a corner.
  auto square = torch::zeros({1, 1, 8, 8}, torch::kUInt8);
  square.narrow(2, 0, 2).narrow(3, 0, 2).fill_(200);
  EXPECT_TRUE(torch::equal(rotate_scale(square, 0.0, 1.0), square));
  const auto turned = rotate_scale(square, 90.0, 1.0);
  EXPECT_EQ(turned.sum().item<int64_t>(), square.sum().item<int64_t>());
  EXPECT_EQ(turned[0][0][0][0].item<int>() + turned[0][0][7][7].item<int>() + turned[0][0][0][7].item<int>() +
                turned[0][0][7][0].item<int>() - square[0][0][0][0].item<int>(),
            0);  // the corner moved to another corner
  EXPECT_EQ(turned[0][0][0][0].item<int>(), 0);

  torch::manual_seed(5);
  const auto images = torch::randint(0, 256, {6, 1, 28, 28}, torch::kLong).to(torch::kUInt8);
  const auto labels = torch::randint(0, 3, {6}, torch::kLong);
  const auto tiles = block_permutation(49, 0);
  auto logits = [&](Classifier& m, const torch::Tensor& x) {
    torch::NoGradGuard g;
    m.eval();
    return m.forward(normalize(x, {0.5}, {0.5}));
  };
  for (const std::string pos : {"none", "learned"}) {
    // (tiny_vit perturbs every parameter: learned positions that matter.)
    auto model = tiny_vit({"model.pos_embed=" + pos, "model.pool=gap", "model.patch_size=4", "data.image_size=28"});
    const auto a = logits(*model, images), b = logits(*model, shuffle_blocks(images, 4, tiles));
    if (pos == "none") {
      EXPECT_TRUE(torch::allclose(a, b, 1e-4, 1e-5)) << (a - b).abs().max().item<double>();
    } else {
      EXPECT_FALSE(torch::allclose(a, b, 1e-4, 1e-5));
    }
    const auto points = run_probes(*model, images, labels, {0.5}, {0.5}, 2, 4);
    ASSERT_EQ(points.size(), 3u + 1u + 2u + 2u);
    EXPECT_EQ(points[0].probe, "translation");
    EXPECT_EQ(points[0].consistency, 1.0);  // a shift of 0
    EXPECT_EQ(points[3].probe, "shuffle");
    if (pos == "none") {
      EXPECT_EQ(points[3].consistency, 1.0);
    }
  }
}
