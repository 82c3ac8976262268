// The child-process supervisor behind the sweep executor and `train --nproc`: exit
// statuses, output and environment, SIGTERM-then-SIGKILL, and signal forwarding, with
// `/bin/sh -c ...` children.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/subprocess.h"
#include "test_util.h"

using namespace biaslab;
using namespace std::chrono_literals;

namespace {

ChildSpec command(const std::string& program, const std::vector<std::string>& argv) {
  ChildSpec spec;
  spec.program = program;
  spec.argv = argv;
  return spec;
}

ChildSpec shell(const std::string& script) { return command("/bin/sh", {"sh", "-c", script}); }

// The file's text; "" while it does not exist yet.
std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits (up to 10 s) until `path` holds `text`: the child got past its set-up.
bool wait_for_text(const std::filesystem::path& path, const std::string& text) {
  for (int i = 0; i < 1000; ++i) {
    if (read_text(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A file the child writes its stdout and stderr to.
struct Output {
  explicit Output(const std::filesystem::path& p)
      : path(p), fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  ~Output() { ::close(fd); }
  std::filesystem::path path;
  int fd;
};

}  // namespace

TEST(Subprocess, ExitStatusesAndTheirDescriptions) {
  Supervisor children;
  const pid_t exited = children.spawn(shell("exit 3"));
  auto e = children.wait();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->pid, exited);
  EXPECT_EQ(e->code(), 3);
  EXPECT_EQ(e->describe(), "exited with status 3");

  children.spawn(shell("kill -9 $$"));
  e = children.wait();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), 128 + SIGKILL);
  EXPECT_EQ(e->describe(), "was killed by signal 9 (Killed)");
  EXPECT_EQ(children.running(), 0);
  EXPECT_FALSE(children.wait()) << "nothing left to wait for";
}

TEST(Subprocess, OutputEnvironmentAndOwnProcessGroup) {
  test::TempDir dir;
  Output out(dir / "log");
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ChildSpec spec = shell("echo \"$GREETING $(cat)\"; echo to-stderr >&2; cut -d' ' -f5 /proc/$$/stat");
  spec.env = std::vector<std::string>{"GREETING=hello", "PATH=/usr/bin:/bin"};
  spec.stdin_fd = null_fd;
  spec.output_fd = out.fd;
  Supervisor children;
  const pid_t pid = children.spawn(spec);
  ::close(null_fd);
  const auto e = children.wait();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), 0);
  EXPECT_EQ(read_text(out.path), "hello \nto-stderr\n" + std::to_string(pid) + "\n");
}

TEST(Subprocess, AProgramThatCannotRunExits127WithTheMessage) {
  test::TempDir dir;
  Output out(dir / "log");
  ChildSpec spec = command((dir / "no-such-program").string(), {"missing"});
  spec.output_fd = out.fd;
  spec.exec_failure_message = "[error] cannot run missing\n";
  Supervisor children;
  children.spawn(spec);
  const auto e = children.wait();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), 127);
  EXPECT_EQ(read_text(out.path), "[error] cannot run missing\n");
}

TEST(Subprocess, WaitTimesOutAndReapsOnlyItsOwnChildren) {
  Supervisor mine, others;
  const pid_t sleeper = mine.spawn(shell("exec sleep 30"));
  others.spawn(shell("exit 0"));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(mine.wait(100ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_EQ(mine.running(), 1);
  const auto e = others.wait();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), 0);
  EXPECT_EQ(mine.children(), std::vector<pid_t>{sleeper});
}  // `mine` kills its sleeper

TEST(Subprocess, TerminateSendsSigtermThenSigkillAfterTheGrace) {
  test::TempDir dir;
  Output out(dir / "log");
  Supervisor children;
  // One child stops on SIGTERM; the other ignores it (an ignored signal stays ignored
  // across exec) and needs the SIGKILL.
  ChildSpec polite = shell("exec sleep 30"), stubborn = shell("trap '' TERM; echo ready; exec sleep 30");
  stubborn.output_fd = out.fd;
  const pid_t p = children.spawn(polite), s = children.spawn(stubborn);
  ASSERT_TRUE(wait_for_text(out.path, "ready"));
  const auto start = std::chrono::steady_clock::now();
  // A grace long enough that the polite child is reaped well inside it on a loaded machine.
  children.terminate(3s);
  auto first = children.wait(10s);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->pid, p);
  EXPECT_EQ(first->code(), 128 + SIGTERM);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  auto second = children.wait(10s);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->pid, s);
  EXPECT_EQ(second->code(), 128 + SIGKILL);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 3s);
}

TEST(Subprocess, ForwardsStopSignalsToEveryChildIncludingLaterOnes) {
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  {
    Supervisor children(/*forward_signals=*/true);
    EXPECT_THROW(Supervisor another(true), Error) << "one forwarding supervisor at a time";
    children.spawn(shell("exec sleep 30"));
    children.spawn(shell("exec sleep 30"));
    std::raise(SIGINT);  // handled by the supervisor: this process lives on
    EXPECT_EQ(children.forwarded_signal(), SIGINT);
    // A child started after the signal is sent it too (a rank forked while Ctrl-C arrived).
    children.spawn(shell("exec sleep 30"));
    for (int i = 0; i < 3; ++i) {
      const auto e = children.wait(10s);
      ASSERT_TRUE(e);
      EXPECT_EQ(e->code(), 128 + SIGINT);
    }
  }
  // The handlers are restored: a non-forwarding supervisor leaves signals to the caller.
  struct sigaction after {};
  ::sigaction(SIGINT, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
  Supervisor plain;
  EXPECT_EQ(plain.forwarded_signal(), 0);
}
