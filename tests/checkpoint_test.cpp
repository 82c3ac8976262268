#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "core/errors.h"
#include "engine/checkpoint.h"
#include "engine/optimizer.h"
#include "models/resnet.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;

namespace {
void train_step(ResNetImpl& m, torch::optim::Optimizer& opt) {
  opt.zero_grad();
  m.forward(torch::ones({2, 1, 8, 8})).sum().backward();
  opt.step();
}
}  // namespace

TEST(Checkpoint, RoundTripModelOptimizerAndMeta) {
  TempDir dir;
  torch::manual_seed(0);
  ResNetImpl a(ResNetOptions(3).in_chans(1).layers({1}).widths({4}));
  OptimConfig oc;
  auto opt_a = make_optimizer(a, oc);
  train_step(a, *opt_a);
  CheckpointMeta meta;
  meta.epoch = 2;
  meta.step = 17;
  meta.best_metric = 0.75;
  meta.best_epoch = 1;
  meta.config_yaml = "name: x\n";
  const auto path = (dir / "ck.pt").string();
  save_checkpoint(path, a, opt_a.get(), meta);

  torch::manual_seed(1);
  ResNetImpl b(ResNetOptions(3).in_chans(1).layers({1}).widths({4}));
  auto opt_b = make_optimizer(b, oc);
  auto back = load_checkpoint(path, b, opt_b.get());
  EXPECT_EQ(back.epoch, 2);
  EXPECT_EQ(back.step, 17);
  EXPECT_DOUBLE_EQ(back.best_metric, 0.75);
  EXPECT_EQ(back.config_yaml, "name: x\n");
  for (size_t i = 0; i < a.parameters().size(); ++i) EXPECT_TRUE(torch::equal(a.parameters()[i], b.parameters()[i]));
  for (size_t i = 0; i < a.buffers().size(); ++i) EXPECT_TRUE(torch::equal(a.buffers()[i], b.buffers()[i]));
  // Same optimizer state: one more identical step keeps the models identical.
  train_step(a, *opt_a);
  train_step(b, *opt_b);
  for (size_t i = 0; i < a.parameters().size(); ++i) EXPECT_TRUE(torch::equal(a.parameters()[i], b.parameters()[i]));
  EXPECT_FALSE(std::filesystem::exists(dir / ".ck.pt.tmp"));
}

TEST(Checkpoint, WrongModelIsReportedByName) {
  TempDir dir;
  ResNetImpl a(ResNetOptions(3).in_chans(1).layers({1}).widths({4}));
  const auto path = (dir / "ck.pt").string();
  save_checkpoint(path, a, nullptr, {});
  ResNetImpl wider(ResNetOptions(3).in_chans(1).layers({1}).widths({8}));
  try {
    load_checkpoint(path, wider, nullptr);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": model/conv1.weight has shape [4, 1, 3, 3]"), std::string::npos)
        << e.what();
  }
}

TEST(Checkpoint, CorruptOrMissingFile) {
  TempDir dir;
  ResNetImpl a(ResNetOptions(3).in_chans(1).layers({1}).widths({4}));
  const auto path = (dir / "ck.pt").string();
  save_checkpoint(path, a, nullptr, {});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  EXPECT_THROW(load_checkpoint(path, a, nullptr), CheckpointError);
  EXPECT_THROW(read_checkpoint_meta((dir / "missing.pt").string()), CheckpointError);
  std::ofstream((dir / "junk.pt").string()) << "not a checkpoint";
  EXPECT_THROW(read_checkpoint_meta((dir / "junk.pt").string()), CheckpointError);
}
