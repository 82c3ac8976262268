// The stop-signal rule (core/signals.h) in a child process: the first SIGTERM is only
// recorded, a second within 2 s is the same request arriving twice and is ignored, a
// second after that ends the process at once by the signal.
#include <gtest/gtest.h>

#include <csignal>
#include <ctime>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "core/signals.h"

using namespace biaslab;

namespace {

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

}  // namespace

TEST(StopSignals, ASecondSignalEndsTheProcessUnlessItRepeatsTheFirst) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child: only async-signal-safe calls from here on.
    close(fds[0]);
    install_stop_handlers();
    std::raise(SIGTERM);
    if (stop_signal() == SIGTERM) (void)!write(fds[1], "1", 1);  // recorded, still running
    std::raise(SIGTERM);                                          // the same request again
    (void)!write(fds[1], "2", 1);
    sleep_ms(2300);
    std::raise(SIGTERM);  // a real second request: dies here
    (void)!write(fds[1], "3", 1);
    _exit(0);
  }
  close(fds[1]);
  std::string seen;
  char c;
  while (read(fds[0], &c, 1) == 1) seen += c;
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(seen, "12");
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}
