#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "core/errors.h"
#include "core/fs.h"
#include "engine/checkpoint.h"
#include "engine/optimizer.h"
#include "models/resnet.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;

namespace {
ResNetImpl tiny(int64_t width = 4) { return ResNetImpl(ResNetOptions(3).in_chans(1).layers({1}).widths({width})); }

void train_step(ResNetImpl& m, torch::optim::Optimizer& opt) {
  opt.zero_grad();
  m.forward(torch::ones({2, 1, 8, 8})).sum().backward();
  opt.step();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a CheckpointError";
  return "";
}

void flip_byte(const std::string& path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(at);
  f.write(&c, 1);
}
}  // namespace

TEST(Checkpoint, RoundTripModelOptimizerEmaAndContents) {
  TempDir dir;
  torch::manual_seed(0);
  ResNetImpl a = tiny(), a_ema = tiny();
  OptimConfig oc;
  auto opt_a = make_optimizer(a, oc);
  train_step(a, *opt_a);
  const auto path = (dir / "ck.pt").string();
  save_checkpoint(path, a, opt_a.get(), &a_ema, {"name: x\n", "{\"s\":1}", "", ""});

  torch::manual_seed(1);
  ResNetImpl b = tiny(), b_ema = tiny();
  auto opt_b = make_optimizer(b, oc);
  auto back = load_checkpoint(path, b, opt_b.get(), &b_ema);
  EXPECT_EQ(back.config_yaml, "name: x\n");
  EXPECT_EQ(back.state_json, "{\"s\":1}");
  EXPECT_FALSE(back.biaslab_version.empty());
  for (size_t i = 0; i < a.parameters().size(); ++i) {
    EXPECT_TRUE(torch::equal(a.parameters()[i], b.parameters()[i]));
    EXPECT_TRUE(torch::equal(a_ema.parameters()[i], b_ema.parameters()[i]));
  }
  for (size_t i = 0; i < a.buffers().size(); ++i) EXPECT_TRUE(torch::equal(a.buffers()[i], b.buffers()[i]));
  // Optimizer state and group options survive: one more step keeps the models identical.
  train_step(a, *opt_a);
  train_step(b, *opt_b);
  for (size_t i = 0; i < a.parameters().size(); ++i) EXPECT_TRUE(torch::equal(a.parameters()[i], b.parameters()[i]));
  EXPECT_EQ(opt_b->param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamWOptions&>(opt_b->param_groups()[1].options()).weight_decay(), 0.0);
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamWOptions&>(opt_b->param_groups()[0].options()).weight_decay(),
                   oc.weight_decay);
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(Checkpoint, RestoresTheRngState) {
  TempDir dir;
  ResNetImpl m = tiny();
  torch::manual_seed(42);
  torch::rand({3});
  const auto path = (dir / "ck.pt").string();
  save_checkpoint(path, m, nullptr, nullptr, {"", "", "", ""});
  auto expected = torch::rand({5});
  torch::manual_seed(7);
  load_checkpoint(path, m, nullptr, nullptr, /*restore_rng=*/true);
  EXPECT_TRUE(torch::equal(torch::rand({5}), expected));
}

TEST(Checkpoint, WrongModelIsReportedByName) {
  TempDir dir;
  ResNetImpl a = tiny();
  const auto path = (dir / "ck.pt").string();
  save_checkpoint(path, a, nullptr, nullptr, {});
  ResNetImpl wider = tiny(8);
  EXPECT_NE(error_of([&] { load_checkpoint(path, wider, nullptr); })
                .find(path + ": model/conv1.weight has shape [4, 1, 3, 3]"),
            std::string::npos);
}

TEST(Checkpoint, BitFlipTruncationAndJunkAreDetected) {
  TempDir dir;
  ResNetImpl a = tiny();
  const auto path = (dir / "ck.pt").string();
  save_checkpoint(path, a, nullptr, nullptr, {});
  const auto size = std::filesystem::file_size(path);

  std::filesystem::copy_file(path, dir / "flip.pt");
  flip_byte((dir / "flip.pt").string(), std::streamoff(size / 2));
  EXPECT_NE(error_of([&] { load_checkpoint((dir / "flip.pt").string(), a, nullptr); }).find("checksum mismatch"),
            std::string::npos);

  std::filesystem::copy_file(path, dir / "short.pt");
  std::filesystem::resize_file(dir / "short.pt", size - 100);
  EXPECT_NE(error_of([&] { read_checkpoint_meta((dir / "short.pt").string()); }).find("truncated"), std::string::npos);

  std::ofstream((dir / "junk.pt").string()) << "not a checkpoint";
  EXPECT_NE(error_of([&] { read_checkpoint_meta((dir / "junk.pt").string()); }).find("bad magic"), std::string::npos);
  EXPECT_NE(error_of([&] { read_checkpoint_meta((dir / "missing.pt").string()); }).find("does not exist"),
            std::string::npos);
}

// The rotation last.pt -> last.prev.pt: `from` stays where it is at every moment (a reader
// polling for last.pt never misses it), `to` becomes a complete copy, and an older `to`
// is replaced without a temporary file left behind.
TEST(Checkpoint, AtomicCopyLeavesTheSourceInPlaceAndReplacesTheTarget) {
  TempDir dir;
  const auto last = dir / "last.pt", prev = dir / "last.prev.pt";
  atomic_write(last, "step 10");
  atomic_write(prev, "step 5");
  atomic_copy(last, prev);
  EXPECT_EQ(read_file(last), "step 10");
  EXPECT_EQ(read_file(prev), "step 10");
  atomic_write(last, "step 15");  // replacing last.pt leaves the copy as it was
  EXPECT_EQ(read_file(prev), "step 10");
  EXPECT_EQ(files_under(dir.path()), (std::vector<std::string>{"last.prev.pt", "last.pt"}));
  EXPECT_THROW(atomic_copy(dir / "missing.pt", prev), std::filesystem::filesystem_error);
  EXPECT_EQ(read_file(prev), "step 10");
}

namespace {
// One float of `t` moved by one unit in the last place.
void nudge_one_ulp(torch::Tensor t) {
  torch::NoGradGuard no_grad;
  float* p = t.data_ptr<float>();
  p[0] = std::nextafter(p[0], std::numeric_limits<float>::infinity());
}

// A flat copy of `source`'s parameters and buffers ('.' in names becomes '_', which
// register_* requires), with the key `from` renamed `to`.
struct FlatCopy : torch::nn::Module {
  FlatCopy(const torch::nn::Module& source, const std::string& from, const std::string& to) {
    auto flat = [&](std::string name) {
      std::replace(name.begin(), name.end(), '.', '_');
      return name == from ? to : name;
    };
    for (const auto& p : source.named_parameters()) register_parameter(flat(p.key()), p.value().detach().clone());
    for (const auto& b : source.named_buffers()) register_buffer(flat(b.key()), b.value().clone());
  }
};
}  // namespace

// The negative control of every bitwise-weights check in the e2e tests: the fingerprint
// changes when one parameter or buffer value moves by one ulp, or when a key is renamed;
// and only then.
TEST(Checkpoint, WeightsFingerprintSeesOneUlpABufferAndAKey) {
  torch::manual_seed(0);
  ResNetImpl m = tiny();
  const std::string before = weights_fingerprint(m);
  EXPECT_EQ(before.size(), 16u);
  EXPECT_EQ(weights_fingerprint(m), before);
  torch::Tensor weight = m.named_parameters()["fc.weight"];
  const torch::Tensor saved = weight.detach().clone();
  nudge_one_ulp(weight);
  EXPECT_NE(weights_fingerprint(m), before) << "one ulp in fc.weight";
  {
    torch::NoGradGuard no_grad;
    weight.copy_(saved);
  }
  EXPECT_EQ(weights_fingerprint(m), before);
  torch::Tensor running_mean = m.named_buffers()["bn1.running_mean"];
  const torch::Tensor saved_mean = running_mean.clone();
  nudge_one_ulp(running_mean);
  EXPECT_NE(weights_fingerprint(m), before) << "one ulp in bn1.running_mean";
  running_mean.copy_(saved_mean);
  EXPECT_EQ(weights_fingerprint(m), before);
  // The same values, one key named otherwise.
  const FlatCopy a(m, "", ""), b(m, "", ""), renamed(m, "fc_weight", "head_weight");
  EXPECT_EQ(weights_fingerprint(a), weights_fingerprint(b));
  EXPECT_NE(weights_fingerprint(renamed), weights_fingerprint(a)) << "fc_weight renamed head_weight";
}
