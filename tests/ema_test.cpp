#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/ema.h"
#include "models/resnet.h"

using namespace biaslab;

TEST(Ema, StartsAsCopyThenAveragesParametersAndCopiesBuffers) {
  torch::manual_seed(0);
  ResNetImpl model(ResNetOptions(3).in_chans(1).layers({1}).widths({4}));
  ResNetImpl shadow(ResNetOptions(3).in_chans(1).layers({1}).widths({4}));
  Ema ema(model, shadow, 0.9);
  for (size_t i = 0; i < model.parameters().size(); ++i)
    EXPECT_TRUE(torch::equal(model.parameters()[i], shadow.parameters()[i]));
  const auto before = shadow.fc->weight.clone();
  {
    torch::NoGradGuard g;
    model.fc->weight.add_(1.0);
    model.named_buffers()["bn1.running_mean"].add_(3.0);
  }
  ema.update();
  EXPECT_TRUE(torch::allclose(shadow.fc->weight, 0.9 * before + 0.1 * model.fc->weight));
  EXPECT_TRUE(torch::equal(shadow.named_buffers()["bn1.running_mean"], model.named_buffers()["bn1.running_mean"]));
  EXPECT_FALSE(shadow.fc->weight.requires_grad());
}
