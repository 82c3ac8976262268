#include <gtest/gtest.h>

#include "engine/schedule.h"

using namespace biaslab;

TEST(Schedule, LinearWarmupThenCosineToMin) {
  SchedConfig c;
  c.name = "cosine";
  c.warmup_steps = 10;
  c.min_lr = 0.01;
  LrSchedule s(c, 1.0, 110);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(4), 0.5);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(60), 0.01 + 0.5 * 0.99, 1e-12);  // halfway through the decay
  EXPECT_NEAR(s.at(110), 0.01, 1e-12);
  for (int64_t i = 11; i < 110; ++i) EXPECT_LT(s.at(i), s.at(i - 1));
}

TEST(Schedule, Constant) {
  SchedConfig c;
  c.name = "constant";
  LrSchedule s(c, 0.3, 100);
  EXPECT_DOUBLE_EQ(s.at(0), 0.3);
  EXPECT_DOUBLE_EQ(s.at(99), 0.3);
}
