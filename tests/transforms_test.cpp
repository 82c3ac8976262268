#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include "data/transforms.h"

using namespace biaslab;

TEST(Transforms, NormalizeMatchesDefinition) {
  auto x = torch::randint(0, 256, {2, 3, 4, 4}).to(torch::kUInt8);
  std::vector<double> mean = {0.1, 0.5, 0.9}, std = {0.2, 0.3, 0.4};
  auto y = normalize(x, mean, std);
  auto ref = (x.to(torch::kFloat) / 255.0 - torch::tensor({0.1, 0.5, 0.9}).view({1, 3, 1, 1})) /
             torch::tensor({0.2, 0.3, 0.4}).view({1, 3, 1, 1});
  EXPECT_TRUE(torch::allclose(y, ref, 1e-5, 1e-5));
}

TEST(Transforms, RandomCropKeepsShapeAndContent) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  auto x = torch::ones({8, 1, 5, 5}, torch::kUInt8);
  auto y = random_crop(x, 2, gen);
  EXPECT_EQ(y.sizes(), x.sizes());
  // Each crop is a 5x5 window of the zero-padded 9x9 image: between 9 and 25 ones.
  auto ones = y.sum({1, 2, 3});
  EXPECT_TRUE((ones >= 9).all().item<bool>());
  EXPECT_TRUE((ones <= 25).all().item<bool>());
  EXPECT_TRUE(torch::equal(random_crop(x, 0, gen), x));
}

TEST(Transforms, HflipFlipsSomeAndKeepsOthers) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  auto x = torch::arange(64 * 3, torch::kFloat).view({64, 1, 1, 3});
  auto y = random_hflip(x, gen);
  int64_t flipped = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const bool same = torch::equal(y[i], x[i]);
    const bool mirrored = torch::equal(y[i], x[i].flip({2}));
    EXPECT_TRUE(same || mirrored);
    flipped += mirrored;
  }
  EXPECT_GT(flipped, 10);
  EXPECT_LT(flipped, 54);
}

namespace {
torch::Tensor random_images(int64_t b, int64_t c, int64_t s) {
  torch::manual_seed(1);
  return torch::randint(0, 256, {b, c, s, s}).to(torch::kUInt8);
}
}  // namespace

TEST(Transforms, RandomResizedCropKeepsShapeAndFullScaleIsIdentityish) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  auto x = random_images(8, 3, 12);
  auto y = random_resized_crop(x, 0.2, 0.6, gen);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_EQ(y.scalar_type(), torch::kUInt8);
  // Scale exactly 1 with a square image: the crop is the whole image, resampled onto itself.
  auto z = random_resized_crop(x, 1.0, 1.0, gen);
  EXPECT_LE((z.to(torch::kInt) - x.to(torch::kInt)).abs().max().item<int>(), 1);
}

TEST(Transforms, TrivialAugmentKeepsShapeRangeAndChangesSome) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(4);
  auto x = random_images(64, 1, 10);
  auto y = trivial_augment(x, gen);
  EXPECT_EQ(y.sizes(), x.sizes());
  EXPECT_EQ(y.scalar_type(), torch::kUInt8);
  int64_t changed = 0, same = 0;
  for (int64_t i = 0; i < 64; ++i) (torch::equal(x[i], y[i]) ? same : changed)++;
  EXPECT_GT(changed, 32);  // 10 of 11 ops change the image (at magnitude > 0)
  EXPECT_GT(same, 0);      // identity is one of them
}

TEST(Transforms, RandomErasingZeroesOneBoxPerChosenImage) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  auto x = torch::ones({16, 2, 20, 20});
  EXPECT_TRUE(torch::equal(random_erasing(x, 0.0, gen), x));  // off
  auto y = random_erasing(x, 1.0, gen);
  for (int64_t i = 0; i < 16; ++i) {
    const double erased = 1.0 - y[i].mean().item<double>();
    EXPECT_GE(erased, 0.015) << i;  // 2% .. 33% of the area, rounded to whole pixels
    EXPECT_LE(erased, 0.36) << i;
  }
}

TEST(Transforms, MixupAndCutmixTargetsAreDistributionsMatchingTheMix) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(6);
  auto x = torch::zeros({4, 1, 8, 8});
  x[0].fill_(1.0);  // reversed batch pairs image 0 with image 3
  auto labels = torch::tensor({0, 1, 2, 3}, torch::kLong);
  for (auto [mixup, cutmix] : std::vector<std::pair<double, double>>{{0.4, 0.0}, {0.0, 1.0}}) {
    auto [mixed, t] = mix_batch(x, labels, 5, mixup, cutmix, gen);
    EXPECT_EQ(t.sizes(), (torch::IntArrayRef{4, 5}));
    EXPECT_TRUE(torch::allclose(t.sum(1), torch::ones({4})));
    // Image 0 keeps a share lambda of itself (value 1): its mean is its own target weight.
    EXPECT_NEAR(mixed[0].mean().item<double>(), t[0][0].item<double>(), 1e-5);
    EXPECT_NEAR(t[0][0].item<double>() + t[0][3].item<double>(), 1.0, 1e-6);
  }
}

TEST(Transforms, ChannelStats) {
  auto x = torch::stack({torch::zeros({1, 2, 2}), torch::full({1, 2, 2}, 255.0)}).to(torch::kUInt8);  // (2, 1, 2, 2)
  auto [mean, std] = channel_stats(x);
  EXPECT_NEAR(mean[0], 0.5, 1e-9);
  EXPECT_NEAR(std[0], 0.5, 1e-9);
}
