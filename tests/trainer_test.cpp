#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>
#include <limits>
#include <set>

#include "core/errors.h"
#include "core/signals.h"
#include "engine/optimizer.h"
#include "engine/trainer.h"

using namespace biaslab;

namespace {

// A linear classifier that can misbehave on chosen training calls.
class Probe : public Classifier {
 public:
  Probe() { fc = register_module("fc", torch::nn::Linear(16, 2)); }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto y = fc(x.flatten(1));
    if (!is_training()) return y;
    ++calls;
    if (nan_calls.count(calls)) y = y * std::numeric_limits<double>::quiet_NaN();
    if (calls == sigterm_call) std::raise(SIGTERM);
    return y;
  }
  torch::nn::Linear fc{nullptr};
  int64_t calls = 0;
  std::set<int64_t> nan_calls;
  int64_t sigterm_call = -1;
};

// Class 0: bright left half; class 1: bright right half; plus noise.
Split make_split(int64_t n, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto labels = torch::randint(0, 2, {n}, gen, torch::kLong);
  auto images = torch::randint(0, 60, {n, 1, 4, 4}, gen, torch::kLong);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = labels[i].item<int64_t>();
    images[i][0].narrow(1, 2 * c, 2).add_(150);
  }
  return {images.to(torch::kUInt8), labels};
}

struct Harness {
  Probe model;
  TrainConfig cfg;
  std::unique_ptr<torch::optim::Optimizer> opt;
  std::unique_ptr<LrSchedule> schedule;
  std::unique_ptr<Loader> train, test;
  std::vector<std::pair<std::string, int64_t>> saved;  // (name, step)

  Harness() {
    cfg.epochs = 3;
    cfg.batch_size = 16;
    cfg.log_every = 1000;
    LoaderOptions lo;
    lo.batch_size = 16;
    lo.shuffle = true;
    lo.drop_last = true;
    lo.mean = {0.0};
    lo.std = {1.0};
    train = std::make_unique<Loader>(make_split(160, 1), lo);
    lo.shuffle = lo.drop_last = false;
    test = std::make_unique<Loader>(make_split(64, 2), lo);
  }
  void fit(TrainState& state) {
    OptimConfig oc;
    oc.lr = 0.05;
    opt = make_optimizer(model, oc);
    SchedConfig sc;
    schedule = std::make_unique<LrSchedule>(sc, oc.lr, planned_steps(cfg, train->batches_per_epoch()));
    TrainerCallbacks cb;
    cb.save_checkpoint = [this](const std::string& name, const TrainState& s) { saved.emplace_back(name, s.step); };
    Trainer t(model, *opt, *schedule, *train, nullptr, *test, cfg, torch::kCPU, cb);
    t.fit(state);
  }
};

}  // namespace

TEST(Trainer, LearnsATinyTaskInFp32AndBf16) {
  for (const std::string precision : {"fp32", "bf16"}) {
    torch::manual_seed(0);
    Harness h;
    h.cfg.precision = precision;
    TrainState s;
    h.fit(s);
    EXPECT_TRUE(s.finished);
    EXPECT_EQ(s.step, 30);
    EXPECT_EQ(s.history.size(), 3u);
    EXPECT_GT(s.history.back().test.acc, 0.9) << precision;
    EXPECT_EQ(s.images_seen, 30 * 16);
    // best and last after every epoch (best only when it improved).
    EXPECT_EQ(h.saved.back(), std::make_pair(std::string("last"), int64_t(30)));
  }
}

TEST(Trainer, NonFiniteLossAbortsAtTheStepWithoutCheckpoint) {
  torch::manual_seed(0);
  Harness h;
  h.model.nan_calls = {13};  // epoch 2, batch 3
  TrainState s;
  try {
    h.fit(s);
    FAIL() << "expected NonFiniteError";
  } catch (const NonFiniteError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite loss at step 13 (epoch 2, batch 3)"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.exit_code(), 4);
  }
  ASSERT_FALSE(h.saved.empty());
  EXPECT_EQ(h.saved.back().second, 10);  // the epoch-1 checkpoint is the last one written
}

TEST(Trainer, SkipPolicySkipsAndCounts) {
  torch::manual_seed(0);
  Harness h;
  h.cfg.nonfinite = "skip";
  h.model.nan_calls = {4, 25};
  TrainState s;
  h.fit(s);
  EXPECT_TRUE(s.finished);
  EXPECT_EQ(s.skipped_steps, 2);
  EXPECT_EQ(s.history[0].skipped_steps, 1);
  EXPECT_EQ(s.history[2].skipped_steps, 1);
  EXPECT_EQ(s.images_seen, 28 * 16);
  EXPECT_TRUE(torch::isfinite(h.model.fc->weight).all().item<bool>());
}

TEST(Trainer, SkipPolicyAbortsAfterTooManyInARow) {
  torch::manual_seed(0);
  Harness h;
  h.cfg.nonfinite = "skip";
  h.cfg.max_consecutive_skips = 3;
  h.model.nan_calls = {5, 6, 7};
  TrainState s;
  EXPECT_THROW(h.fit(s), NonFiniteError);
  EXPECT_EQ(s.step, 7);
}

TEST(Trainer, SigtermFinishesTheStepSavesAndStops) {
  torch::manual_seed(0);
  install_stop_handlers();
  Harness h;
  h.model.sigterm_call = 14;
  TrainState s;
  try {
    h.fit(s);
    FAIL() << "expected Interrupted";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.exit_code(), 75);
  }
  reset_stop_signal();
  EXPECT_EQ(s.step, 14);
  EXPECT_EQ(s.batch_in_epoch, 4);
  EXPECT_EQ(h.saved.back(), std::make_pair(std::string("last"), int64_t(14)));
}

TEST(Trainer, ResumingFromAStateMatchesAnUninterruptedRun) {
  // Uninterrupted.
  torch::manual_seed(0);
  Harness a;
  TrainState sa;
  a.fit(sa);
  // Stopped after 14 steps by a signal, then continued in a fresh trainer from the
  // same model/optimizer objects and state (what a checkpoint restores).
  torch::manual_seed(0);
  install_stop_handlers();
  Harness b;
  b.model.sigterm_call = 14;
  TrainState sb;
  EXPECT_THROW(b.fit(sb), Interrupted);
  reset_stop_signal();
  b.model.sigterm_call = -1;
  auto opt = std::move(b.opt);
  TrainerCallbacks cb;
  Trainer t(b.model, *opt, *b.schedule, *b.train, nullptr, *b.test, b.cfg, torch::kCPU, cb);
  t.fit(sb);
  EXPECT_EQ(train_state_to_json(sa), train_state_to_json(sb));
  EXPECT_TRUE(torch::equal(a.model.fc->weight, b.model.fc->weight));
}
