#include "sweep/regime.h"

#include <cmath>
#include <limits>

namespace biaslab::sweep {

double tail_rise(const std::vector<std::pair<int64_t, double>>& curve, int64_t steps, double tail) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (curve.size() < 2 || steps <= 0) return kNaN;
  const double tail_start = double(steps) * (1.0 - tail);
  double before = kNaN;
  bool inside = false;
  for (const auto& [step, acc] : curve) {
    if (double(step) <= tail_start)
      before = acc;
    else
      inside = true;
  }
  if (std::isnan(before) || !inside) return kNaN;
  return curve.back().second - before;
}

bool fits_training_data(double train_acc, double held_out_acc, const RegimeRule& rule) {
  if (!std::isfinite(train_acc) || !std::isfinite(held_out_acc)) return false;
  return train_acc >= rule.fit_level || train_acc - held_out_acc > rule.fit_gap;
}

std::string regime_of(double train_acc, double held_out_acc, double rise, const RegimeRule& rule) {
  if (!std::isfinite(train_acc) || !std::isfinite(held_out_acc)) return "";
  if (fits_training_data(train_acc, held_out_acc, rule)) return "fits";
  if (!std::isfinite(rise)) return "";
  return rise > rule.min_gain ? "underfits" : "plateau";
}

std::string regime_with_budget(const std::string& regime, double train_acc, double held_out_acc, double change,
                               double delta, const RegimeRule& rule) {
  if (regime == "fits" || !std::isfinite(change) || !std::isfinite(train_acc) || !std::isfinite(held_out_acc))
    return regime;
  if (fits_training_data(train_acc, held_out_acc, rule)) return "fits";
  return change > delta ? "underfits" : "plateau";
}

}  // namespace biaslab::sweep
