#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/synthetic.h"

using namespace biaslab;

TEST(Synthetic, DeterministicBalancedAndSeeded) {
  for (const auto& task : synthetic_tasks()) {
    auto a = generate_synthetic(task, "train", 24, 1, 32, 7);
    auto b = generate_synthetic(task, "train", 24, 1, 32, 7);
    EXPECT_TRUE(torch::equal(a.images, b.images)) << task;
    EXPECT_TRUE(torch::equal(a.labels, b.labels));
    EXPECT_EQ(torch::bincount(a.labels).min().item<int64_t>(), 24 / synthetic_classes(task));
    EXPECT_FALSE(torch::equal(a.images, generate_synthetic(task, "train", 24, 1, 32, 8).images)) << task;
    EXPECT_FALSE(torch::equal(a.images, generate_synthetic(task, "test", 24, 1, 32, 7).images)) << task;
    // Sample i does not depend on how many are generated.
    EXPECT_TRUE(torch::equal(a.images.narrow(0, 0, 5), generate_synthetic(task, "train", 5, 1, 32, 7).images));
    // Channels replicate the grey image.
    auto rgb = generate_synthetic(task, "train", 2, 3, 32, 7);
    EXPECT_TRUE(torch::equal(rgb.images.select(1, 2), a.images.narrow(0, 0, 2).select(1, 0)));
  }
}

TEST(Synthetic, TextureOrientationIsVisibleInTheGradients) {
  // The class is the grating's orientation: the dominant gradient direction per class differs.
  auto s = generate_synthetic("texture", "train", 400, 1, 32, 1);
  auto x = s.images.to(torch::kFloat).squeeze(1);
  auto gx = (x.narrow(2, 1, 31) - x.narrow(2, 0, 31)).narrow(1, 0, 31).abs().mean({1, 2});
  auto gy = (x.narrow(1, 1, 31) - x.narrow(1, 0, 31)).narrow(2, 0, 31).abs().mean({1, 2});
  auto ratio = gx / gy;  // 0 deg (vertical stripes): x-gradients dominate; 90 deg: y-gradients
  auto mean_ratio = [&](int64_t c) { return ratio.masked_select(s.labels == c).mean().item<double>(); };
  EXPECT_GT(mean_ratio(0), 1.5);
  EXPECT_LT(mean_ratio(2), 1.0 / 1.5);
  EXPECT_NEAR(mean_ratio(1), 1.0, 0.35);
}

TEST(Synthetic, SameDifferentHasTwoSeparateShapes) {
  auto s = generate_synthetic("same_different", "train", 20, 1, 32, 3);
  for (int64_t i = 0; i < 20; ++i) {
    auto bright = s.images[i][0] > 120;  // shapes are drawn at 150..255 on a ~30 background
    EXPECT_GT(bright.sum().item<int64_t>(), 4) << i;
    // Both the left and right halves, or the top and bottom halves, hold shape pixels:
    // the shapes are at least half the image apart.
    auto rows = bright.any(1).nonzero(), cols = bright.any(0).nonzero();
    const int64_t span = std::max(rows.max().item<int64_t>() - rows.min().item<int64_t>(),
                                  cols.max().item<int64_t>() - cols.min().item<int64_t>());
    EXPECT_GE(span, 10) << i;
  }
}
