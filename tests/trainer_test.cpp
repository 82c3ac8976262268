#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>
#include <limits>
#include <set>

#include "core/errors.h"
#include "core/signals.h"
#include "engine/evaluate.h"
#include "engine/loaders.h"
#include "engine/optimizer.h"
#include "engine/run_dir.h"
#include "engine/trainer.h"

using namespace biaslab;

namespace {

// A linear classifier that can misbehave on chosen training calls.
class Probe : public Classifier {
 public:
  Probe() {
    fc = register_module("fc", torch::nn::Linear(16, 2));
    updates = register_buffer("updates", torch::zeros({}));
  }
  std::vector<Stage> stages() override {
    return {{"fc", {"fc"}, [this](const torch::Tensor& x) { return forward(x); }}};
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto y = fc(x.flatten(1));
    if (!is_training()) return y;
    ++calls;
    // Like BatchNorm's running statistics: state the forward pass itself updates.
    updates.add_(1.0);
    if (nan_calls.count(calls)) {
      y = y * std::numeric_limits<double>::quiet_NaN();
      updates.add_(std::numeric_limits<double>::quiet_NaN());
    }
    if (calls == sigterm_call) std::raise(SIGTERM);
    return y;
  }
  torch::nn::Linear fc{nullptr};
  torch::Tensor updates;
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
  std::vector<std::string> removed;
  std::unique_ptr<Loader> val;  // optional
  std::unique_ptr<Loader> train_eval;  // optional
  std::vector<StepLog> step_rows;

  Harness() {
    cfg.precision = "fp32";  // not "auto": the tests must not depend on the host CPU
    cfg.epochs = 3;
    cfg.batch_size = 16;
    cfg.log_every = 4;
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
  // A 48-image validation split (what early stopping and eval_test: final select on).
  void add_val() {
    LoaderOptions lo;
    lo.batch_size = 16;
    lo.mean = {0.0};
    lo.std = {1.0};
    val = std::make_unique<Loader>(make_split(48, 3), lo);
  }
  void fit(TrainState& state) {
    OptimConfig oc;
    oc.lr = 0.05;
    opt = make_optimizer(model, oc);
    SchedConfig sc;
    schedule = std::make_unique<LrSchedule>(sc, oc.lr, planned_steps(cfg, train->batches_per_epoch()));
    TrainerCallbacks cb;
    cb.save_checkpoint = [this](const std::string& name, const TrainState& s) { saved.emplace_back(name, s.step); };
    cb.remove_checkpoint = [this](const std::string& name) { removed.push_back(name); };
    cb.on_step_log = [this](const StepLog& r) { step_rows.push_back(r); };
    Trainer t(model, *opt, *schedule, *train, val.get(), *test, cfg, torch::kCPU, cb);
    t.set_train_eval(train_eval.get());
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
  // The skipped steps' buffer updates were rolled back.
  EXPECT_EQ(h.model.updates.item<double>(), 28.0);
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
  cb.on_step_log = [&b](const StepLog& r) { b.step_rows.push_back(r); };
  Trainer t(b.model, *opt, *b.schedule, *b.train, nullptr, *b.test, b.cfg, torch::kCPU, cb);
  t.fit(sb);
  EXPECT_EQ(train_state_to_json(sa), train_state_to_json(sb));
  EXPECT_TRUE(torch::equal(a.model.fc->weight, b.model.fc->weight));
  // The per-step rows: every 4 steps and at the last (30 steps); the resumed run's rows
  // (those before step 14, then the rest) equal the uninterrupted run's, images/s aside.
  std::vector<int64_t> steps;
  for (const auto& r : a.step_rows) steps.push_back(r.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{4, 8, 12, 16, 20, 24, 28, 30}));
  ASSERT_EQ(a.step_rows.size(), b.step_rows.size());
  for (size_t i = 0; i < a.step_rows.size(); ++i) {
    const StepLog &x = a.step_rows[i], &y = b.step_rows[i];
    EXPECT_EQ(x.step, y.step);
    EXPECT_EQ(x.epoch, y.epoch);
    EXPECT_EQ(x.lr, y.lr);
    EXPECT_EQ(x.loss, y.loss) << "row " << i;
    EXPECT_EQ(x.acc, y.acc);
    EXPECT_EQ(x.grad_norm, y.grad_norm);
    EXPECT_EQ(x.steps, y.steps);
    EXPECT_GT(x.images_per_s, 0);
  }
  EXPECT_EQ(a.step_rows.back().steps, 2);
}

namespace {
// Up to 20 epochs with early stopping (patience 2) on the validation split, from seed 0.
TrainState fit_with_early_stopping(Harness& h, int64_t min_steps = 0) {
  h.cfg.epochs = 20;
  h.cfg.early_stop_patience = 2;
  h.cfg.early_stop_min_steps = min_steps;
  h.add_val();
  TrainState s;
  h.fit(s);
  return s;
}
}  // namespace

TEST(Trainer, EarlyStoppingOnValidationAccuracy) {
  torch::manual_seed(0);
  Harness h;
  const TrainState s = fit_with_early_stopping(h);
  // The task is solved within a few epochs; two epochs without a better val_acc stop it.
  EXPECT_TRUE(s.stopped_early);
  EXPECT_TRUE(s.finished);
  EXPECT_LT(s.history.size(), 20u);
  EXPECT_EQ(int64_t(s.history.size()), s.best_epoch + 2);
  EXPECT_TRUE(s.history.back().has_val);
}

// train.early_stop_min_steps: the same run is not stopped before that step; once past it,
// the usual patience rule applies (here at once: it has long been without a better epoch).
TEST(Trainer, EarlyStoppingWaitsForMinSteps) {
  torch::manual_seed(0);
  Harness first;
  const TrainState s0 = fit_with_early_stopping(first);
  ASSERT_TRUE(s0.stopped_early);
  const int64_t steps_per_epoch = first.train->batches_per_epoch();
  const int64_t min_epochs = int64_t(s0.history.size()) + 4;
  ASSERT_LT(min_epochs, 20);

  torch::manual_seed(0);
  Harness h;
  const int64_t min_steps = min_epochs * steps_per_epoch - steps_per_epoch / 2;  // mid-epoch
  const TrainState s = fit_with_early_stopping(h, min_steps);
  EXPECT_TRUE(s.stopped_early);
  EXPECT_GE(s.step, min_steps);
  // The first evaluation at or past the step, unless a better epoch came later.
  EXPECT_EQ(int64_t(s.history.size()), std::max(min_epochs, s.best_epoch + 2));
  EXPECT_GT(int64_t(s.history.size()), int64_t(s0.history.size()));
  EXPECT_TRUE(s.history.back().has_val);
}

TEST(Trainer, TopKKeepsTheBestEpochCheckpoints) {
  torch::manual_seed(0);
  Harness h;
  h.cfg.epochs = 4;
  h.cfg.save_top_k = 2;
  TrainState s;
  h.fit(s);
  ASSERT_EQ(s.top_k.size(), 2u);
  EXPECT_GE(s.top_k[0].metric, s.top_k[1].metric);
  int epoch_saves = 0;
  for (const auto& [name, step] : h.saved) epoch_saves += name.rfind("epoch-", 0) == 0;
  // Every epoch checkpoint written was either kept or removed later.
  EXPECT_EQ(size_t(epoch_saves), 2 + h.removed.size());
  for (const auto& e : s.top_k) {
    const std::string name = fmt::format("epoch-{:04d}", e.epoch);
    EXPECT_EQ(std::count(h.removed.begin(), h.removed.end(), name), 0) << name;
  }
}

TEST(Trainer, EmaIsEvaluatedEveryEpoch) {
  torch::manual_seed(0);
  Harness h;
  Probe shadow;
  Ema ema(h.model, shadow, 0.5);
  OptimConfig oc;
  oc.lr = 0.05;
  auto opt = make_optimizer(h.model, oc);
  LrSchedule sched(SchedConfig{}, oc.lr, 30);
  Trainer t(h.model, *opt, sched, *h.train, nullptr, *h.test, h.cfg, torch::kCPU, {}, &ema);
  TrainState s;
  t.fit(s);
  ASSERT_TRUE(s.history.back().has_ema);
  EXPECT_GT(s.history.back().ema_test.acc, 0.9);
  EXPECT_FALSE(torch::equal(shadow.fc->weight, h.model.fc->weight));
}

TEST(Trainer, EvalEveryEvaluatesEveryNthAndTheLastEpoch) {
  torch::manual_seed(0);
  Harness h;
  h.cfg.epochs = 5;
  h.cfg.eval_every = 2;
  TrainState s;
  h.fit(s);
  ASSERT_EQ(s.history.size(), 5u);
  std::vector<bool> evaluated;
  for (const auto& r : s.history) evaluated.push_back(r.evaluated);
  EXPECT_EQ(evaluated, (std::vector<bool>{false, true, false, true, true}));
  EXPECT_TRUE(s.best_epoch == 2 || s.best_epoch == 4 || s.best_epoch == 5) << s.best_epoch;
  EXPECT_GT(s.history.back().test.acc, 0.9);
  // "best" is only written after evaluated epochs.
  for (const auto& [name, step] : h.saved) {
    if (name != "best") continue;
    EXPECT_TRUE(step == 20 || step == 40 || step == 50) << step;
  }
  // The unevaluated epochs survive a checkpoint round trip as such.
  const TrainState back = train_state_from_json(train_state_to_json(s));
  EXPECT_FALSE(back.history[0].evaluated);
  EXPECT_TRUE(back.history[1].evaluated);
}

// train.eval_test: final: the validation split at every evaluation, the test set only at
// the last one, here the epoch early stopping stops at; the flag survives a checkpoint.
TEST(Trainer, EvalTestFinalEvaluatesTheTestSetOnlyAtTheEnd) {
  for (const bool early : {true, false}) {
    SCOPED_TRACE(early ? "early stopping" : "full length");
    torch::manual_seed(0);
    Harness h;
    h.cfg.epochs = early ? 20 : 4;
    h.cfg.early_stop_patience = early ? 2 : 0;
    h.cfg.eval_test = "final";
    h.add_val();
    TrainState s;
    h.fit(s);
    ASSERT_GE(s.history.size(), 2u);
    if (early) {
      EXPECT_TRUE(s.stopped_early);
    }
    for (size_t i = 0; i + 1 < s.history.size(); ++i) {
      EXPECT_TRUE(s.history[i].has_val) << i;
      EXPECT_FALSE(s.history[i].has_test) << i;
    }
    EXPECT_TRUE(s.history.back().has_test);
    EXPECT_GT(s.history.back().test.acc, 0.9);
    const TrainState back = train_state_from_json(train_state_to_json(s));
    EXPECT_FALSE(back.history.front().has_test);
    EXPECT_TRUE(back.history.back().has_test);
  }
}

// train.train_eval_size: at every evaluation the training sample is evaluated like the test
// set (eval mode: the probe's forward counts no call, no augmentation), and what the last
// record holds is exactly the final model's loss and accuracy on that sample.
TEST(Trainer, EvaluatesTheTrainingSampleCleanAtEveryEvaluation) {
  torch::manual_seed(0);
  Harness h;
  h.cfg.eval_every = 2;  // epochs 2 and 3 (the last) are evaluated
  LoaderOptions lo;
  lo.batch_size = 32;
  lo.mean = {0.0};
  lo.std = {1.0};
  const Split sample = train_eval_sample(make_split(160, 1), 100, 2);
  EXPECT_NEAR(double(sample.size()), 100.0, 2.0);  // each class rounded on its own
  h.train_eval = std::make_unique<Loader>(sample, lo);
  TrainState s;
  h.fit(s);
  ASSERT_EQ(s.history.size(), 3u);
  EXPECT_FALSE(s.history[0].has_train_eval);
  EXPECT_TRUE(s.history[1].has_train_eval);
  EXPECT_TRUE(s.history[2].has_train_eval);
  EXPECT_EQ(h.model.calls, 30);  // one training forward per step, none for evaluation
  const EvalMetrics again = evaluate(h.model, *h.train_eval, torch::kCPU, "fp32");
  EXPECT_EQ(s.history[2].train_eval.acc, again.accuracy);
  EXPECT_EQ(s.history[2].train_eval.loss, again.loss);
  // Stratified: 50 of each class when the split has them (make_split draws labels at random).
  const auto counts = torch::bincount(sample.labels);
  EXPECT_NEAR(counts[0].item<double>() / 100.0, 0.5, 0.1);
  // The metrics.csv columns and the checkpointed state carry it.
  const std::string csv = run_dir::metrics_csv(s, false);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "epoch,step,lr,train_loss,train_acc,train_eval_loss,train_eval_acc,val_loss,"
                                           "val_acc,test_loss,test_acc,skipped_steps");
  const TrainState back = train_state_from_json(train_state_to_json(s));
  EXPECT_EQ(back.history[2].train_eval.acc, s.history[2].train_eval.acc);
  EXPECT_FALSE(back.history[0].has_train_eval);
}
