#include "core/subprocess.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace biaslab {
namespace {

using Clock = std::chrono::steady_clock;

// The forwarding supervisor's children, as its signal handler sees them (a slot is -1
// once its child was reaped). Lock-free atomics are async-signal-safe.
std::atomic<pid_t> g_forward_to[Supervisor::kMaxForwarded];
std::atomic<int> g_forward_slots{0};
std::atomic<int> g_forwarded{0};
std::atomic<bool> g_forwarding{false};

extern "C" void forward_signal(int sig) {
  const int saved_errno = errno;
  g_forwarded = sig;
  const int slots = g_forward_slots.load();
  for (int i = 0; i < slots; ++i)
    if (const pid_t pid = g_forward_to[i].load(); pid > 0) ::kill(pid, sig);
  errno = saved_errno;
}

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (const auto& s : strings) p.push_back(const_cast<char*>(s.c_str()));
  p.push_back(nullptr);
  return p;
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void become_child(const ChildSpec& spec, char* const* argv, char* const* envp, pid_t parent,
                               const sigset_t& parent_mask) {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::pthread_sigmask(SIG_SETMASK, &parent_mask, nullptr);
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(spec.orphaned_status);  // the parent died before prctl
  if (spec.stdin_fd >= 0) ::dup2(spec.stdin_fd, 0);
  if (spec.output_fd >= 0) {
    ::dup2(spec.output_fd, 1);
    ::dup2(spec.output_fd, 2);
  }
  if (spec.program_fd >= 0)
    ::fexecve(spec.program_fd, argv, envp);
  else
    ::execve(spec.program.c_str(), argv, envp);
  const std::string& message = spec.exec_failure_message;
  if (!message.empty() && ::write(2, message.data(), message.size()) < 0) {
  }
  ::_exit(127);
}

}  // namespace

int ChildExit::code() const {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

std::string ChildExit::describe() const {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    return "was killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

Supervisor::Supervisor(bool forward_signals) : forwarding_(forward_signals) {
  if (!forwarding_) return;
  if (g_forwarding.exchange(true)) throw Error("Supervisor: another one already forwards signals");
  g_forwarded = 0;
  g_forward_slots = 0;
  struct sigaction action {};
  action.sa_handler = forward_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, &old_int_);
  ::sigaction(SIGTERM, &action, &old_term_);
}

Supervisor::~Supervisor() {
  for (const pid_t pid : children_) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  if (!forwarding_) return;
  g_forward_slots = 0;
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  g_forwarding = false;
}

pid_t Supervisor::spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) throw Error("Supervisor::spawn: no argv");
  int slot = g_forward_slots.load();
  if (forwarding_) {
    for (int i = 0; i < g_forward_slots.load(); ++i)
      if (g_forward_to[i].load() <= 0) slot = i;
    if (slot >= kMaxForwarded)
      throw Error("Supervisor: more than " + std::to_string(kMaxForwarded) + " children to forward signals to");
  }
  const std::vector<char*> argv = pointers(spec.argv);
  const std::vector<char*> envp = spec.env ? pointers(*spec.env) : std::vector<char*>();
  char* const* env = spec.env ? envp.data() : environ;

  const sigset_t stop = stop_signals();
  sigset_t previous;
  ::pthread_sigmask(SIG_BLOCK, &stop, &previous);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) become_child(spec, argv.data(), env, parent, previous);
  const int fork_errno = errno;
  if (pid > 0) {
    ::setpgid(pid, pid);  // also from this side, so the group exists before we might signal it
    children_.push_back(pid);
    if (forwarding_) {
      g_forward_to[slot] = pid;
      if (slot == g_forward_slots.load()) g_forward_slots = slot + 1;
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);  // a signal that came meanwhile is handled now
  if (pid < 0) throw SpawnError(std::string("fork failed: ") + std::strerror(fork_errno), fork_errno);
  // A signal forwarded before this child was in the table.
  if (const int sig = forwarded_signal()) ::kill(pid, sig);
  return pid;
}

std::optional<ChildExit> Supervisor::wait(std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  for (;;) {
    for (const pid_t pid : children_) {
      int status = 0;
      const pid_t reaped = ::waitpid(pid, &status, WNOHANG);
      if (reaped == pid) {
        forget(pid);
        return ChildExit{pid, status};
      }
      if (reaped < 0 && errno != EINTR) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
    }
    if (children_.empty()) return std::nullopt;
    kill_if_due();
    auto pause = std::chrono::milliseconds(20);
    if (timeout != kForever) {
      const auto left = timeout - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      if (left <= std::chrono::milliseconds(0)) return std::nullopt;
      pause = std::min(pause, left);
    }
    std::this_thread::sleep_for(pause);
  }
}

void Supervisor::signal_all(int sig) {
  for (const pid_t pid : children_) ::kill(pid, sig);
}

void Supervisor::terminate(std::chrono::milliseconds grace) {
  signal_all(SIGTERM);
  if (grace != kForever) kill_at_ = Clock::now() + grace;
}

int Supervisor::forwarded_signal() const { return forwarding_ ? g_forwarded.load() : 0; }

void Supervisor::forget(pid_t pid) {
  children_.erase(std::remove(children_.begin(), children_.end(), pid), children_.end());
  if (!forwarding_) return;
  for (int i = 0; i < g_forward_slots.load(); ++i)
    if (g_forward_to[i].load() == pid) g_forward_to[i] = -1;
}

void Supervisor::kill_if_due() {
  if (!kill_at_ || Clock::now() <= *kill_at_) return;
  signal_all(SIGKILL);
  kill_at_.reset();
}

}  // namespace biaslab
