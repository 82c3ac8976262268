#pragma once
// Child processes that cannot outlive their parent: the sweep's runs and the ranks of
// `train --nproc`. Each child gets its own process group (a terminal's Ctrl-C reaches
// only the parent, which decides what to pass on) and a parent-death signal (SIGTERM: a
// child whose parent dies checkpoints and stops). The Supervisor reaps only its own
// children, stops them with SIGTERM and, after a grace period, SIGKILL, and can forward
// the SIGINT/SIGTERM this process receives to all of them.
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"

namespace biaslab {

/// What a child runs. Everything is prepared before fork(): the child only makes system calls.
struct ChildSpec {
  std::vector<std::string> argv;  ///< argv[0] is the name the child sees
  std::string program;            ///< the file to execute (execve), unless program_fd is set
  int program_fd = -1;            ///< an open executable (fexecve): a rebuild cannot swap it meanwhile
  std::optional<std::vector<std::string>> env;  ///< "KEY=value" entries; default: this process's
  int stdin_fd = -1;   ///< dup2'ed onto the child's 0, 1 and 2 when >= 0; the caller keeps
  int output_fd = -1;  ///< and closes its copies (output_fd serves as stdout and stderr)
  /// Written to the child's stderr when it cannot execute the program (then status 127).
  std::string exec_failure_message;
  /// Exit status of a child whose parent died before the parent-death signal was armed.
  int orphaned_status = 128 + SIGTERM;
};

/// How a child ended: its raw waitpid() status.
struct ChildExit {
  pid_t pid = -1;
  int wait_status = 0;

  /// The shell's convention: the exit status, or 128 + the signal that killed it.
  int code() const;
  /// "exited with status 3" or "was killed by signal 9 (Killed)".
  std::string describe() const;
};

/// A child could not be started (fork failed); errno_value says why.
class SpawnError : public Error {
 public:
  SpawnError(const std::string& what, int errno_value) : Error(what), errno_value_(errno_value) {}
  int errno_value() const { return errno_value_; }

 private:
  int errno_value_;
};

class Supervisor {
 public:
  /// Waits without a limit.
  static constexpr std::chrono::milliseconds kForever = std::chrono::milliseconds::max();
  /// Children a forwarding supervisor can hold (the signal handler's fixed table).
  static constexpr int kMaxForwarded = 256;

  /// With `forward_signals`, SIGINT and SIGTERM received by this process are sent on to
  /// every child (from the signal handler, at once) until the supervisor is destroyed;
  /// only one such supervisor may exist at a time. Without, signals are the caller's.
  explicit Supervisor(bool forward_signals = false);
  /// Kills (SIGKILL) and reaps children still running, restores signal handlers.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  /// Starts a child; SpawnError when fork fails. SIGINT/SIGTERM are blocked while
  /// forking, so a child never runs this process's handlers; a signal forwarded before
  /// the child existed is sent to it right after.
  pid_t spawn(const ChildSpec& spec);

  /// The next child to exit, reaped; nullopt when none did within `timeout` (or none
  /// runs). Polls every 20 ms and sends the SIGKILL of a terminate() that is due.
  std::optional<ChildExit> wait(std::chrono::milliseconds timeout = kForever);

  /// Sends `sig` to every running child.
  void signal_all(int sig);
  /// SIGTERM to every running child now, SIGKILL to those still running after `grace`
  /// (sent by wait(); never with kForever).
  void terminate(std::chrono::milliseconds grace);

  int running() const { return int(children_.size()); }
  const std::vector<pid_t>& children() const { return children_; }
  /// The signal a forwarding supervisor passed on (the last one), or 0.
  int forwarded_signal() const;

 private:
  void forget(pid_t pid);
  void kill_if_due();

  bool forwarding_;
  std::vector<pid_t> children_;
  std::optional<std::chrono::steady_clock::time_point> kill_at_;
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace biaslab
