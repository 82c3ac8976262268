// The regime rule of `biaslab report` (sweep/regime.h) on synthetic curves: a model that
// fits its data, one still fitting when the budget ran out, one on a plateau, and the
// budget comparison overruling the curve.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sweep/regime.h"

using namespace biaslab::sweep;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

TEST(Regime, TailRiseIsTheLastValueMinusTheLastBeforeTheTail) {
  // 100 steps, tail 0.2: the tail starts after step 80.
  EXPECT_NEAR(tail_rise({{20, 0.5}, {40, 0.6}, {80, 0.7}, {90, 0.72}, {100, 0.75}}, 100, 0.2), 0.05, 1e-12);
  // A fall counts as a negative rise.
  EXPECT_NEAR(tail_rise({{50, 0.8}, {100, 0.78}}, 100, 0.2), -0.02, 1e-12);
  // Nothing before the tail, or nothing inside it: cannot tell.
  EXPECT_TRUE(std::isnan(tail_rise({{90, 0.5}, {100, 0.6}}, 100, 0.2)));
  EXPECT_TRUE(std::isnan(tail_rise({{40, 0.5}, {80, 0.6}}, 100, 0.2)));
  EXPECT_TRUE(std::isnan(tail_rise({{100, 0.6}}, 100, 0.2)));
  EXPECT_TRUE(std::isnan(tail_rise({{40, 0.5}, {100, 0.6}}, 0, 0.2)));
}

TEST(Regime, FitsUnderfitsAndPlateauFromSyntheticCurves) {
  const RegimeRule rule;  // fit at 99% or 3 points above held-out; 0.5-point rise over the last 20%
  // A CNN on 570 images: 100% training accuracy, 80% held-out.
  EXPECT_EQ(regime_of(1.0, 0.80, 0.0, rule), "fits");
  // 99.2% training accuracy on an easy task, 98.9% held-out: fits by its level alone.
  EXPECT_EQ(regime_of(0.992, 0.989, 0.01, rule), "fits");
  // 96% training, 92% held-out: 4 points above it.
  EXPECT_EQ(regime_of(0.96, 0.92, 0.02, rule), "fits");
  // A ViT whose clean training accuracy (80%) is no higher than its test accuracy and
  // still rose 3 points over the tail: more steps are the lever.
  const std::vector<std::pair<int64_t, double>> rising = {{300, 0.60}, {600, 0.70}, {960, 0.77}, {1200, 0.80}};
  const double rise = tail_rise(rising, 1200, rule.tail);
  EXPECT_NEAR(rise, 0.03, 1e-12);
  EXPECT_EQ(regime_of(0.80, 0.80, rise, rule), "underfits");
  // The same level reached early and flat since: a plateau.
  const std::vector<std::pair<int64_t, double>> flat = {{300, 0.78}, {600, 0.80}, {960, 0.801}, {1200, 0.803}};
  EXPECT_EQ(regime_of(0.803, 0.80, tail_rise(flat, 1200, rule.tail), rule), "plateau");
  // The thresholds are the rule's: exactly 3 points above is not more than 3.
  EXPECT_EQ(regime_of(0.83, 0.80, 0.0, rule), "plateau");
  EXPECT_EQ(regime_of(0.83, 0.80, 0.0, RegimeRule{0.2, 0.005, 0.02, 0.99}), "fits");
  // Without a training accuracy, or without the rise when it does not fit: cannot tell.
  EXPECT_EQ(regime_of(kNaN, 0.80, 0.01, rule), "");
  EXPECT_EQ(regime_of(0.80, kNaN, 0.01, rule), "");
  EXPECT_EQ(regime_of(0.80, 0.80, kNaN, rule), "");
  EXPECT_EQ(regime_of(1.0, 0.80, kNaN, rule), "fits");  // fitting needs no rise
}

TEST(Regime, TheNextBudgetOverrulesTheCurve) {
  const RegimeRule rule;
  const double delta = 0.003;
  // Rising in its tail, but twice the steps add only 0.2 points: a plateau.
  EXPECT_EQ(regime_with_budget("underfits", 0.80, 0.80, 0.002, delta, rule), "plateau");
  // Flat in its tail (an annealed schedule), but twice the steps add 2 points.
  EXPECT_EQ(regime_with_budget("plateau", 0.80, 0.80, 0.02, delta, rule), "underfits");
  // The curve could not tell; the budget can.
  EXPECT_EQ(regime_with_budget("", 0.80, 0.80, 0.02, delta, rule), "underfits");
  // A model that fits its data stays "fits" (more steps may help too: budget.csv says).
  EXPECT_EQ(regime_with_budget("fits", 1.0, 0.80, 0.02, delta, rule), "fits");
  // No measured change, or no training accuracy: the curve's regime stands.
  EXPECT_EQ(regime_with_budget("underfits", 0.80, 0.80, kNaN, delta, rule), "underfits");
  EXPECT_EQ(regime_with_budget("", kNaN, 0.80, 0.02, delta, rule), "");
  // Exactly delta is converged: within it.
  EXPECT_EQ(regime_with_budget("underfits", 0.80, 0.80, 0.003, delta, rule), "plateau");
}
