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
