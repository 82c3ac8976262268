#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/loss_scaler.h"

using namespace biaslab;

TEST(LossScaler, HalvesOnOverflowAndGrowsAfterInterval) {
  LossScaler s(1024.0, 3);
  s.update(true);
  EXPECT_EQ(s.scale(), 512.0);
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 512.0);
  s.update(false);
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_EQ(s.good_steps(), 0);
  s.update(false);
  s.update(true);  // an overflow resets the run of good steps
  s.update(false);
  s.update(false);
  EXPECT_EQ(s.scale(), 512.0);
}

TEST(LossScaler, UnscaledGradientsEqualTheUnscaledLossGradients) {
  auto w = torch::randn({4}, torch::requires_grad());
  auto x = torch::randn({4});
  LossScaler s(256.0);
  s.scale_loss((w * x).sum()).backward();
  s.unscale({w});
  EXPECT_TRUE(torch::allclose(w.grad(), x));
}
