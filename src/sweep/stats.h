#pragma once
// Summary statistics over seeds: mean, sample standard deviation and the two-sided
// 95% confidence interval of the mean from Student's t distribution.
#include <vector>

namespace biaslab::sweep {

struct Stats {
  int n = 0;
  double mean = 0.0;
  double sd = 0.0;        ///< sample standard deviation (n - 1); 0 when n < 2
  double ci95_half = 0.0; ///< t(0.975, n - 1) * sd / sqrt(n); 0 when n < 2
};

Stats describe(const std::vector<double>& values);

/// The ordinary least-squares line y = a + b x through the points (x[i], y[i]): the slope b
/// with its 95% t-interval, b +- t(0.975, n - 2) * s / sqrt(Sxx), where s^2 is the residual
/// variance on n - 2 degrees of freedom. n = 0 (no slope) with fewer than 3 points or
/// fewer than 2 distinct x.
struct Slope {
  int n = 0;
  double slope = 0.0;
  double ci95_half = 0.0;
};
Slope fit_slope(const std::vector<double>& x, const std::vector<double>& y);

/// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1).
double t_quantile_975(int df);

}  // namespace biaslab::sweep
