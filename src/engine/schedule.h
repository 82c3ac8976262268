#pragma once
// Learning-rate schedule: linear warm-up from 0, then cosine decay to min_lr (or constant).
#include <cstdint>

#include "config/config.h"

namespace biaslab {

class LrSchedule {
 public:
  LrSchedule(const SchedConfig& cfg, double base_lr, int64_t total_steps);
  /// Learning rate for optimizer step `step` (0-based).
  double at(int64_t step) const;

 private:
  SchedConfig cfg_;
  double base_lr_;
  int64_t total_steps_;
};

}  // namespace biaslab
