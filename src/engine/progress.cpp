#include "engine/progress.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace biaslab {

void Progress::start_epoch(int64_t epoch, int64_t epochs, int64_t steps_in_epoch) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps_in_epoch;
  start_ = std::chrono::steady_clock::now();
  drawn_ = false;
}

bool Progress::wants_update(int64_t step_in_epoch) const {
  const int64_t every = terminal_ ? std::max<int64_t>(1, std::min<int64_t>(10, log_every_)) : log_every_;
  return (step_in_epoch + 1) % every == 0 || step_in_epoch + 1 == steps_;
}

void Progress::update(int64_t step_in_epoch, double loss, double accuracy, double images_per_s) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t done = step_in_epoch + 1;
  const double eta = done > 0 ? elapsed / double(done) * double(steps_ - done) : 0.0;
  if (terminal_) {
    const int width = 24;
    const int filled = steps_ > 0 ? int(width * done / steps_) : width;
    std::fprintf(stderr, "\repoch %lld/%lld [%s%s] %lld/%lld loss %.4f acc %.2f%% %.0f img/s ETA %.0fs   ",
                 (long long)epoch_ + 1, (long long)epochs_, std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), (long long)done, (long long)steps_, loss,
                 100.0 * accuracy, images_per_s, eta);
    std::fflush(stderr);
    drawn_ = true;
  } else {
    spdlog::info("epoch {}/{} step {}/{} loss {:.4f} acc {:.2f}% {:.0f} img/s ETA {:.0f}s", epoch_ + 1, epochs_, done,
                 steps_, loss, 100.0 * accuracy, images_per_s, eta);
  }
}

void Progress::finish_epoch() {
  if (terminal_ && drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace biaslab
