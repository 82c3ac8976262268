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
  // The class is the gratings' orientation: the dominant gradient direction per class differs.
  auto s = generate_synthetic("texture", "train", 400, 1, 32, 1);
  auto x = s.images.to(torch::kFloat).squeeze(1);
  auto gx = (x.narrow(2, 1, 31) - x.narrow(2, 0, 31)).narrow(1, 0, 31).abs().mean({1, 2});
  auto gy = (x.narrow(1, 1, 31) - x.narrow(1, 0, 31)).narrow(2, 0, 31).abs().mean({1, 2});
  auto ratio = gx / gy;  // 0 deg (vertical stripes): x-gradients dominate; 90 deg: y-gradients
  auto mean_ratio = [&](int64_t c) { return ratio.masked_select(s.labels == c).mean().item<double>(); };
  // Diluted by the isotropic background, but ordered as the orientations.
  EXPECT_GT(mean_ratio(0), 1.1);
  EXPECT_LT(mean_ratio(2), 1.0 / 1.1);
  EXPECT_GT(mean_ratio(0), mean_ratio(1));
  EXPECT_GT(mean_ratio(1), mean_ratio(2));
  EXPECT_GT(mean_ratio(0), mean_ratio(3));
  EXPECT_GT(mean_ratio(3), mean_ratio(2));
}

TEST(Synthetic, SameDifferentGlyphsAreIdenticalExactlyForLabelOne) {
  auto s = generate_synthetic("same_different", "train", 40, 1, 36, 3);
  for (int64_t i = 0; i < 40; ++i) {
    auto on = (s.images[i][0] > 120).nonzero();  // glyph cells are 170..255 on a ~40 background
    ASSERT_GE(on.size(0), 4) << i;
    // Split the bright cells into the two glyphs by their distance from the first one.
    auto first = on[0];
    auto d = (on - first).abs().amax(1);
    auto near = on.index_select(0, (d < 6).nonzero().squeeze(1)), far = on.index_select(0, (d >= 6).nonzero().squeeze(1));
    ASSERT_GT(far.size(0), 0) << i;
    // Glyph shapes relative to their top-left bounding-box corner.
    auto shape = [](const torch::Tensor& cells) { return cells - std::get<0>(cells.min(0)); };
    const bool same = near.size(0) == far.size(0) && torch::equal(shape(near), shape(far));
    EXPECT_EQ(same, s.labels[i].item<int64_t>() == 1) << i;
  }
}
