#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/train_state.h"

using namespace biaslab;

TEST(TrainState, JsonRoundTripIsExact) {
  TrainState s;
  s.epoch = 3;
  s.step = 1234;
  s.batch_in_epoch = 17;
  s.epoch_loss_sum = 0.1 + 0.2;  // not representable exactly in decimal
  s.epoch_correct = 99;
  s.epoch_seen = 128;
  s.last_lr = std::nextafter(1e-3, 1.0);
  s.best_metric = 2.0 / 3.0;
  s.best_epoch = 2;
  s.loss_scale = 32768;
  s.finished = true;
  EpochRecord r;
  r.epoch = 1;
  r.train_loss = std::sqrt(2.0);
  r.has_val = true;
  r.val = {1.0 / 7.0, 0.123456789012345678};
  r.test = {M_PI, M_E};
  r.has_ema = true;
  r.ema_test = {1e-300, 1.0 - 1e-16};
  s.history = {r, r};
  s.top_k = {{2, 0.9}, {1, 0.8}};
  const TrainState b = train_state_from_json(train_state_to_json(s));
  EXPECT_EQ(train_state_to_json(b), train_state_to_json(s));
  EXPECT_EQ(b.epoch_loss_sum, s.epoch_loss_sum);
  EXPECT_EQ(b.last_lr, s.last_lr);
  EXPECT_EQ(b.best_metric, s.best_metric);
  EXPECT_EQ(b.history[1].val.acc, r.val.acc);
  EXPECT_EQ(b.history[0].ema_test.loss, 1e-300);
  EXPECT_EQ(b.top_k[1].epoch, 1);
}

// Every field set to a value no other field has, compared field by field: a key read
// into the wrong field, or not read at all, fails here (a comparison of the JSON texts
// would pass a key swapped on both sides).
TEST(TrainState, EveryFieldNonDefaultRoundTrips) {
  TrainState s;
  s.epoch = 11;
  s.step = 12;
  s.batch_in_epoch = 13;
  s.epoch_loss_sum = 14.5;
  s.epoch_correct = 15;
  s.epoch_seen = 16;
  s.epoch_skipped = 17;
  s.last_lr = 18.5;
  s.best_metric = 19.5;
  s.best_epoch = 20;
  s.epochs_since_best = 21;
  s.images_seen = 22;
  s.skipped_steps = 23;
  s.consecutive_skips = 24;
  s.overflow_steps = 25;
  s.loss_scale = 26.5;
  s.scaler_good_steps = 27;
  s.finished = true;
  s.stopped_early = true;
  s.window = {28, 29, 30.5, 31, 32.5, 33, 34};
  EpochRecord r;
  r.epoch = 41;
  r.step = 42;
  r.lr = 43.5;
  r.train_loss = 44.5;
  r.train_acc = 45.5;
  r.evaluated = false;  // default true
  r.has_val = true;
  r.has_test = false;   // default true
  r.val = {46.5, 47.5, 48.5};
  r.test = {49.5, 50.5, 51.5};
  r.has_ema = true;
  r.ema_val = {52.5, 53.5, 54.5};
  r.ema_test = {55.5, 56.5, 57.5};
  r.has_train_eval = true;
  r.train_eval = {58.5, 59.5, 60.5};
  r.ema_train_eval = {61.5, 62.5, 63.5};
  r.skipped_steps = 64;
  s.history = {r};
  s.top_k = {{65, 66.5}};

  const TrainState b = train_state_from_json(train_state_to_json(s));
  EXPECT_EQ(b.epoch, 11);
  EXPECT_EQ(b.step, 12);
  EXPECT_EQ(b.batch_in_epoch, 13);
  EXPECT_EQ(b.epoch_loss_sum, 14.5);
  EXPECT_EQ(b.epoch_correct, 15);
  EXPECT_EQ(b.epoch_seen, 16);
  EXPECT_EQ(b.epoch_skipped, 17);
  EXPECT_EQ(b.last_lr, 18.5);
  EXPECT_EQ(b.best_metric, 19.5);
  EXPECT_EQ(b.best_epoch, 20);
  EXPECT_EQ(b.epochs_since_best, 21);
  EXPECT_EQ(b.images_seen, 22);
  EXPECT_EQ(b.skipped_steps, 23);
  EXPECT_EQ(b.consecutive_skips, 24);
  EXPECT_EQ(b.overflow_steps, 25);
  EXPECT_EQ(b.loss_scale, 26.5);
  EXPECT_EQ(b.scaler_good_steps, 27);
  EXPECT_TRUE(b.finished);
  EXPECT_TRUE(b.stopped_early);
  EXPECT_EQ(b.window.steps, 28);
  EXPECT_EQ(b.window.seen, 29);
  EXPECT_EQ(b.window.loss_sum, 30.5);
  EXPECT_EQ(b.window.correct, 31);
  EXPECT_EQ(b.window.grad_norm_sum, 32.5);
  EXPECT_EQ(b.window.applied, 33);
  EXPECT_EQ(b.window.skipped, 34);
  ASSERT_EQ(b.history.size(), 1u);
  const EpochRecord& h = b.history[0];
  EXPECT_EQ(h.epoch, 41);
  EXPECT_EQ(h.step, 42);
  EXPECT_EQ(h.lr, 43.5);
  EXPECT_EQ(h.train_loss, 44.5);
  EXPECT_EQ(h.train_acc, 45.5);
  EXPECT_FALSE(h.evaluated);
  EXPECT_TRUE(h.has_val);
  EXPECT_FALSE(h.has_test);
  const auto same = [](const EvalPair& a, double loss, double acc, double top5) {
    EXPECT_EQ(a.loss, loss);
    EXPECT_EQ(a.acc, acc);
    EXPECT_EQ(a.top5, top5);
  };
  same(h.val, 46.5, 47.5, 48.5);
  same(h.test, 49.5, 50.5, 51.5);
  EXPECT_TRUE(h.has_ema);
  same(h.ema_val, 52.5, 53.5, 54.5);
  same(h.ema_test, 55.5, 56.5, 57.5);
  EXPECT_TRUE(h.has_train_eval);
  same(h.train_eval, 58.5, 59.5, 60.5);
  same(h.ema_train_eval, 61.5, 62.5, 63.5);
  EXPECT_EQ(h.skipped_steps, 64);
  ASSERT_EQ(b.top_k.size(), 1u);
  EXPECT_EQ(b.top_k[0].epoch, 65);
  EXPECT_EQ(b.top_k[0].metric, 66.5);
}

TEST(TrainState, MalformedJsonThrows) {
  EXPECT_THROW(train_state_from_json("{\"epoch\": 1}"), std::runtime_error);
  EXPECT_THROW(train_state_from_json("not json"), std::runtime_error);
}

TEST(TrainState, NonFiniteValuesSurvive) {
  TrainState s;
  EpochRecord r;
  r.test = {std::numeric_limits<double>::infinity(), 0.1};
  r.val = {std::numeric_limits<double>::quiet_NaN(), 0.0};
  r.train_loss = -std::numeric_limits<double>::infinity();
  s.history = {r};
  s.epoch_loss_sum = std::numeric_limits<double>::quiet_NaN();
  const TrainState b = train_state_from_json(train_state_to_json(s));
  EXPECT_TRUE(std::isinf(b.history[0].test.loss) && b.history[0].test.loss > 0);
  EXPECT_TRUE(std::isnan(b.history[0].val.loss));
  EXPECT_TRUE(std::isinf(b.history[0].train_loss) && b.history[0].train_loss < 0);
  EXPECT_TRUE(std::isnan(b.epoch_loss_sum));
}
