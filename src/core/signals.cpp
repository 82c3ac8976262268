#include "core/signals.h"

#include <atomic>
#include <csignal>
#include <ctime>

namespace biaslab {
namespace {
std::atomic<int> g_signal{0};
std::atomic<long long> g_first_ms{0};

long long monotonic_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

extern "C" void on_stop_signal(int sig) {
  const long long now = monotonic_ms();
  if (g_signal.exchange(sig) == 0) {
    g_first_ms.store(now);
    return;
  }
  // A second signal within 2 s is the same request arriving twice (a terminal's Ctrl-C
  // reaches a process group that a launcher such as torchrun also forwards it to).
  if (now - g_first_ms.load() < 2000) return;
  std::signal(sig, SIG_DFL);  // a later second signal: die now
  std::raise(sig);
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);  // one handler at a time
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_signal.load(); }
void reset_stop_signal() { g_signal.store(0); }

}  // namespace biaslab
