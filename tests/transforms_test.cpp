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
