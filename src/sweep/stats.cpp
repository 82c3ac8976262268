#include "sweep/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace biaslab::sweep {

double t_quantile_975(int df) {
  if (df < 1) throw std::invalid_argument("t_quantile_975: df must be >= 1");
  // Exact table values for small df, where the approximation below is poor.
  static const double kTable[30] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
                                    2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
                                    2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df <= 30) return kTable[df - 1];
  // Cornish-Fisher expansion around the normal quantile (error < 1e-4 for df > 30).
  const double z = 1.959963984540054, d = df;
  return z + (z * z * z + z) / (4 * d) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * d * d) +
         (3 * std::pow(z, 7) + 19 * std::pow(z, 5) + 17 * z * z * z - 15 * z) / (384 * d * d * d);
}

Stats describe(const std::vector<double>& values) {
  Stats s;
  s.n = int(values.size());
  if (s.n == 0) return s;
  for (double v : values) s.mean += v;
  s.mean /= s.n;
  if (s.n < 2) return s;
  double ss = 0.0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(ss / (s.n - 1));
  s.ci95_half = t_quantile_975(s.n - 1) * s.sd / std::sqrt(double(s.n));
  return s;
}

Slope fit_slope(const std::vector<double>& x, const std::vector<double>& y) {
  Slope out;
  const size_t n = std::min(x.size(), y.size());
  if (n < 3) return out;
  double mx = 0.0, my = 0.0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= double(n);
  my /= double(n);
  double sxx = 0.0, sxy = 0.0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 1e-12 * double(n))) return out;  // one distinct x: no line
  out.n = int(n);
  out.slope = sxy / sxx;
  const double a = my - out.slope * mx;
  double rss = 0.0;
  for (size_t i = 0; i < n; ++i) rss += (y[i] - a - out.slope * x[i]) * (y[i] - a - out.slope * x[i]);
  out.ci95_half = t_quantile_975(int(n) - 2) * std::sqrt(rss / double(n - 2) / sxx);
  return out;
}

}  // namespace biaslab::sweep
