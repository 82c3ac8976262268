#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/ema.h"
#include "models/resnet.h"

using namespace biaslab;

TEST(Ema, StartsAsCopyThenAveragesParametersAndStatisticsAndCopiesCounters) {
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
    model.named_buffers()["bn1.num_batches_tracked"].add_(5);
  }
  const auto mean_before = shadow.named_buffers()["bn1.running_mean"].clone();
  ema.update();
  EXPECT_TRUE(torch::allclose(shadow.fc->weight, 0.9 * before + 0.1 * model.fc->weight));
  // BatchNorm statistics are averaged like the weights; the batch counter is copied.
  EXPECT_TRUE(torch::allclose(shadow.named_buffers()["bn1.running_mean"],
                              0.9 * mean_before + 0.1 * model.named_buffers()["bn1.running_mean"]));
  EXPECT_FALSE(torch::allclose(shadow.named_buffers()["bn1.running_mean"], model.named_buffers()["bn1.running_mean"]));
  EXPECT_EQ(shadow.named_buffers()["bn1.num_batches_tracked"].item<int64_t>(),
            model.named_buffers()["bn1.num_batches_tracked"].item<int64_t>());
  EXPECT_FALSE(shadow.fc->weight.requires_grad());
}
