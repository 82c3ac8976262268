#pragma once
// The per-step log: what the trainer reports every train.log_every optimizer steps,
// written to metrics_steps.csv (and TensorBoard) by the run recorder.
#include <cstdint>
#include <limits>

namespace biaslab {

/// One row of the per-step log, every train.log_every optimizer steps and at the last
/// step: means over the steps since the previous row (applied updates only; skipped
/// ones are counted).
struct StepLog {
  int64_t step = 0;   ///< optimizer steps completed
  int64_t epoch = 0;  ///< 1-based epoch the step belongs to
  double lr = 0.0;    ///< learning rate of the row's last step
  double loss = std::numeric_limits<double>::quiet_NaN();       ///< NaN when every step was skipped
  double acc = std::numeric_limits<double>::quiet_NaN();
  double grad_norm = std::numeric_limits<double>::quiet_NaN();  ///< before clipping
  double images_per_s = 0.0;  ///< measured: images since the previous row (or the resume) over wall time
  int64_t skipped_steps = 0;  ///< updates skipped in the window
  int64_t steps = 0;          ///< steps the row covers
};

}  // namespace biaslab
