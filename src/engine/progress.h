#pragma once
// Training progress: a one-line bar on a terminal, a log line every N steps otherwise.
#include <chrono>
#include <cstdint>
#include <string>

namespace biaslab {

class Progress {
 public:
  Progress(bool terminal, int64_t log_every) : terminal_(terminal), log_every_(log_every) {}
  void start_epoch(int64_t epoch, int64_t epochs, int64_t steps_in_epoch);
  /// True when this step should report (the caller then syncs the device for `update`).
  bool wants_update(int64_t step_in_epoch) const;
  void update(int64_t step_in_epoch, double loss, double accuracy, double images_per_s);
  void finish_epoch();

 private:
  bool terminal_;
  int64_t log_every_;
  int64_t epoch_ = 0, epochs_ = 0, steps_ = 0;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
};

}  // namespace biaslab
