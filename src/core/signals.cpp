#include "core/signals.h"

#include <atomic>
#include <csignal>

namespace biaslab {
namespace {
std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int sig) {
  if (g_signal.exchange(sig) != 0) {
    std::signal(sig, SIG_DFL);  // second signal: die now
    std::raise(sig);
  }
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_signal.load(); }
void reset_stop_signal() { g_signal.store(0); }

}  // namespace biaslab
