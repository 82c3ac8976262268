#include <gtest/gtest.h>

#include <cmath>

#include "sweep/stats.h"

using namespace biaslab::sweep;

TEST(Stats, MeanSampleSdAndStudentInterval) {
  const Stats s = describe({0.90, 0.92, 0.94, 0.96});
  EXPECT_EQ(s.n, 4);
  EXPECT_NEAR(s.mean, 0.93, 1e-12);
  // sd = sqrt(((0.03^2 + 0.01^2) * 2) / 3) = 0.0258199
  EXPECT_NEAR(s.sd, 0.025819889, 1e-8);
  // t(0.975, 3) = 3.182446; half width = t * sd / sqrt(4)
  EXPECT_NEAR(s.ci95_half, 3.1824 * 0.025819889 / 2, 1e-5);
}

TEST(Stats, OneOrNoValue) {
  EXPECT_EQ(describe({}).n, 0);
  const Stats one = describe({0.5});
  EXPECT_EQ(one.n, 1);
  EXPECT_EQ(one.mean, 0.5);
  EXPECT_EQ(one.sd, 0.0);
  EXPECT_EQ(one.ci95_half, 0.0);
}

TEST(Stats, TQuantilesMatchTables) {
  // Reference values of Student's t 0.975 quantile.
  EXPECT_NEAR(t_quantile_975(1), 12.7062, 1e-4);
  EXPECT_NEAR(t_quantile_975(2), 4.3027, 1e-4);
  EXPECT_NEAR(t_quantile_975(10), 2.2281, 1e-4);
  EXPECT_NEAR(t_quantile_975(30), 2.0423, 1e-4);
  EXPECT_NEAR(t_quantile_975(40), 2.0211, 2e-4);
  EXPECT_NEAR(t_quantile_975(60), 2.0003, 2e-4);
  EXPECT_NEAR(t_quantile_975(120), 1.9799, 2e-4);
  EXPECT_NEAR(t_quantile_975(100000), 1.95997, 1e-4);
  EXPECT_THROW(t_quantile_975(0), std::invalid_argument);
}

// Hand-computed: x = 0, 1, 2 twice, y = 1, 2, 4, 1, 3, 3. Means 1 and 7/3; Sxx = 4,
// Sxy = 5, slope 1.25, intercept 13/12; residual sum of squares 13/12 on 4 df, so
// se = sqrt(13/48 / 4) = 0.260208 and the half-width is t(0.975, 4) = 2.7764 times that.
TEST(Stats, LeastSquaresSlopeWithItsInterval) {
  const Slope s = fit_slope({0, 1, 2, 0, 1, 2}, {1, 2, 4, 1, 3, 3});
  EXPECT_EQ(s.n, 6);
  EXPECT_NEAR(s.slope, 1.25, 1e-12);
  EXPECT_NEAR(s.ci95_half, 2.7764 * std::sqrt(13.0 / 48.0 / 4.0), 1e-9);
  EXPECT_EQ(fit_slope({1, 1, 1}, {1, 2, 3}).n, 0);  // one distinct x: no line
  EXPECT_EQ(fit_slope({1, 2}, {1, 2}).n, 0);        // two points: no interval
}
