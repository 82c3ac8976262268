#include <gtest/gtest.h>
#include <torch/torch.h>

#include "config/loader.h"
#include "core/flop_counter.h"
#include "core/torch_compat.h"
#include "layers/attention.h"
#include "models/registry.h"
#include "models/resnet.h"
#include "models/summary.h"
#include "models/vit.h"

using namespace biaslab;

TEST(FlopCounter, CountsMacsOfConvLinearAndProducts) {
  torch::NoGradGuard g;
  torch::nn::Linear lin(7, 5);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 4, 3).padding(1).groups(1));
  torch::nn::Conv2d grouped(torch::nn::Conv2dOptions(4, 6, 3).groups(2));
  {
    FlopCounter c;
    lin(torch::randn({2, 3, 7}));  // 6 rows x 5 outputs x 7 inputs; not again as the addmm/matmul inside
    EXPECT_EQ(c.macs(), 2 * 3 * 5 * 7);
    EXPECT_EQ(c.flops(), 2 * c.macs());
  }
  {
    FlopCounter c;
    conv(torch::randn({2, 3, 8, 8}));  // output 2x4x8x8, each 3*3*3 MACs
    grouped(torch::randn({1, 4, 5, 5}));  // output 1x6x3x3, each 2*3*3 MACs
    EXPECT_EQ(c.macs(), 2 * 4 * 8 * 8 * 27 + 6 * 3 * 3 * 18);
  }
  {
    FlopCounter c;
    torch::matmul(torch::randn({2, 4, 6}), torch::randn({2, 6, 3}));  // 2*4*3 outputs x 6
    torch::relu(torch::randn({100}));                                 // not counted
    EXPECT_EQ(c.macs(), 2 * 4 * 3 * 6);
  }
  FlopCounter after;  // a new counter starts at zero; the old one is gone
  EXPECT_EQ(after.macs(), 0);
}

namespace {
Config imagenet_config(const std::string& preset) {
  return load_config_text("model: {preset: " + preset + "}\ndata: {preset: fashion_mnist}\n", "in.yaml",
                          {"data.image_size=224", "data.channels=3", "data.num_classes=1000",
                           "data.mean=[0.5, 0.5, 0.5]", "data.std=[0.5, 0.5, 0.5]", "data.class_names=[]"});
}
}  // namespace

TEST(Summary, MacsMatchTorchvisionsPublishedGflops) {
  // torchvision's model tables ("GFLOPS", which count multiply-accumulates):
  // resnet18 1.81, resnet50 4.09, vit_b_16 17.56.
  for (const auto& [preset, gmacs, params] : std::vector<std::tuple<std::string, double, int64_t>>{
           {"resnet18", 1.81, 11689512}, {"resnet50", 4.09, 25557032}, {"vit_b16", 17.56, 86567656}}) {
    const Config cfg = imagenet_config(preset);
    auto model = build_model(cfg.model, input_spec(cfg.data));
    const auto s = summarize(*model, 3, 224);
    EXPECT_NEAR(1e-9 * double(s.macs), gmacs, 0.005) << preset;
    EXPECT_EQ(s.parameters, params) << preset;  // every parameter belongs to exactly one stage
  }
}

TEST(Summary, StagesOfResNet20) {
  ResNetImpl r(ResNetOptions(10).in_chans(1));
  const auto s = summarize(r, 1, 28);
  ASSERT_EQ(s.stages.size(), 5u);
  EXPECT_EQ(s.stages[0].name, "stem");
  EXPECT_EQ(s.stages[2].output_shape, (std::vector<int64_t>{32, 14, 14}));
  EXPECT_EQ(s.stages[4].output_shape, (std::vector<int64_t>{10}));
  EXPECT_EQ(s.parameters, count_parameters(r));
  // Theoretical receptive fields: 3 (stem), +6 convs -> 15, stride-2 stage -> 37, -> 81.
  EXPECT_EQ(s.stages[0].receptive_field, 3);
  EXPECT_EQ(s.stages[1].receptive_field, 15);
  EXPECT_EQ(s.stages[2].receptive_field, 37);
  EXPECT_EQ(s.stages[3].receptive_field, 81);
  EXPECT_EQ(s.stages[4].receptive_field, StageSummary::kGlobal);
  EXPECT_TRUE(r.is_training());  // restored
}

namespace {
// Side of the square of input pixels that influence the centre output unit of `trunk`,
// measured by gradients (absolute, summed over a few random inputs and all channels).
int64_t gradient_support(const std::function<torch::Tensor(const torch::Tensor&)>& trunk, int64_t channels,
                         int64_t side) {
  torch::manual_seed(0);
  auto total = torch::zeros({side, side});
  for (int i = 0; i < 6; ++i) {
    auto x = torch::randn({1, channels, side, side}, torch::requires_grad());
    auto y = trunk(x);  // (1, C, h, w)
    // A random mix of the centre unit's channels: a plain sum would have an exactly zero
    // gradient behind a LayerNorm (its outputs always sum to a constant).
    auto centre = y.select(2, y.size(2) / 2).select(2, y.size(3) / 2);
    (centre * torch::randn_like(centre)).sum().backward();
    total += x.grad()[0].abs().sum(0);
  }
  auto rows = (total.sum(1) > 0).nonzero(), cols = (total.sum(0) > 0).nonzero();
  if (rows.numel() == 0 || cols.numel() == 0) {
    ADD_FAILURE() << "no gradient reached the input: every path through the ReLUs is dead at this initialisation";
    return 0;
  }
  const int64_t h = rows.max().item<int64_t>() - rows.min().item<int64_t>() + 1;
  const int64_t w = cols.max().item<int64_t>() - cols.min().item<int64_t>() + 1;
  EXPECT_EQ(h, w);
  return h;
}
}  // namespace

TEST(Summary, ReceptiveFieldOfStackedConvsIsOnePlusTwoLByGradients) {
  // A plain (no skip, no norm) cifar ResNet of one stage: stem + 2 convs per block,
  // L = 1 + 2 * blocks stacked 3x3 stride-1 convs.
  for (int64_t blocks : {1, 2, 4}) {
    // The initialisation is seeded here: drawn from whatever state the tests run before
    // left, a narrow plain ReLU stack can come out dead at the centre unit.
    torch::manual_seed(100 + blocks);
    ResNetImpl r(ResNetOptions(0).global_pool(false).in_chans(2).layers({blocks}).widths({4}).norm("none").residual(false));
    const int64_t layers = 1 + 2 * blocks;
    const int64_t measured = gradient_support([&](const torch::Tensor& x) { return r.forward(x); }, 2, 41);
    EXPECT_EQ(measured, 1 + 2 * layers) << blocks << " blocks";
    EXPECT_EQ(summarize(r, 2, 41).stages.back().receptive_field, measured);
  }
}

TEST(Summary, TheoreticalReceptiveFieldMatchesGradientsWithStridesAndBottlenecks) {
  for (const auto& opts : {ResNetOptions(0).global_pool(false).in_chans(1).layers({1, 1}).widths({4, 4}),
                           ResNetOptions(0).global_pool(false).in_chans(1).block("bottleneck").layers({1, 2}).widths({8, 8}),
                           ResNetOptions(0).global_pool(false).in_chans(1).stem("imagenet").layers({1, 1}).widths({4, 4})}) {
    torch::manual_seed(7);
    ResNetImpl r(opts);
    r.eval();
    const int64_t theory = summarize(r, 1, 96).stages.back().receptive_field;
    EXPECT_EQ(gradient_support([&](const torch::Tensor& x) { return r.forward(x); }, 1, 96), theory)
        << opts.stem() << " " << opts.block();
  }
}

TEST(Summary, LocalWindowViTGrowsItsFieldLikeAConvolution) {
  // Patch 2, 3x3 windows, 2 blocks: 2 + 2 * (3 - 1) * 2 = 10 pixels; global attention: everything.
  ViTImpl local(ViTOptions(24, 2, 3).in_chans(1).embed_dim(8).depth(2).num_heads(2).attn_window(3).pool("gap").pos_embed("none"));
  const auto s = summarize(local, 1, 24);
  EXPECT_EQ(s.stages[0].receptive_field, 2);               // embed: one patch
  EXPECT_EQ(s.stages[2].receptive_field, 10);              // blocks.1
  EXPECT_EQ(s.stages.back().receptive_field, StageSummary::kGlobal);  // head pools
  auto centre_token = [&](const torch::Tensor& x) {
    auto t = local.forward_features(x);  // (1, 144, 8) -> (1, 8, 12, 12)
    return t.transpose(1, 2).reshape({1, 8, 12, 12});
  };
  EXPECT_EQ(gradient_support(centre_token, 1, 24), 10);
  ViTImpl global(ViTOptions(24, 2, 3).in_chans(1).embed_dim(8).depth(1).num_heads(2).pool("gap"));
  EXPECT_EQ(summarize(global, 1, 24).stages[1].receptive_field, StageSummary::kGlobal);
}

TEST(FlopCounter, FusedAndManualAttentionCountTheSame) {
  // LibTorch 2.x's scaled_dot_product_attention (what `auto` runs on CUDA) counts the
  // same products as the manual q k^T and weights x v. (biaslab's CPU kernel is not an
  // operator the counter sees: summaries count under runtime.kernels=reference.)
  if (!compat::has_fused_attention()) GTEST_SKIP() << "LibTorch " << compat::torch_version() << " has no fused attention";
  torch::NoGradGuard g;
  auto q = torch::randn({2, 4, 9, 4}), k = torch::randn({2, 4, 9, 4}), v = torch::randn({2, 4, 9, 4});
  int64_t macs[2];
  for (int i = 0; i < 2; ++i) {
    FlopCounter c;
    if (i == 0) compat::fused_attention(q, k, v, {}, 0.0);
    else torch::matmul(torch::matmul(q, k.transpose(-2, -1)).softmax(-1), v);
    macs[i] = c.macs();
  }
  // q k^T and weights x v: 2 * (2*4*9*9*4).
  EXPECT_EQ(macs[1], 2 * (2 * 4 * 9 * 9 * 4));
  EXPECT_EQ(macs[0], macs[1]);
}

TEST(Summary, LeavesTheGlobalRandomGeneratorAlone) {
  const auto cfg = load_config_text("model: {preset: vit_lite_p4}\ndata: {preset: fashion_mnist}\n", "in.yaml");
  auto model = build_model(cfg.model, input_spec(cfg.data));
  torch::manual_seed(5);
  const auto expected = torch::rand({4});
  torch::manual_seed(5);
  summarize(*model, 1, 28);
  EXPECT_TRUE(torch::equal(torch::rand({4}), expected));
}
