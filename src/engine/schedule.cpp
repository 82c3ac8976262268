#include "engine/schedule.h"

#include <algorithm>
#include <cmath>

namespace biaslab {

LrSchedule::LrSchedule(const SchedConfig& cfg, double base_lr, int64_t total_steps)
    : cfg_(cfg), base_lr_(base_lr), total_steps_(std::max<int64_t>(total_steps, 1)) {}

double LrSchedule::at(int64_t step) const {
  const int64_t warmup = cfg_.warmup_steps;
  if (warmup > 0 && step < warmup) return base_lr_ * double(step + 1) / double(warmup);
  if (cfg_.name == "constant") return base_lr_;
  const int64_t span = std::max<int64_t>(total_steps_ - warmup, 1);
  const double progress = std::clamp(double(step - warmup) / double(span), 0.0, 1.0);
  return cfg_.min_lr + 0.5 * (base_lr_ - cfg_.min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace biaslab
