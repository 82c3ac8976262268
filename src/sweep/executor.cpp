#include "sweep/executor.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <thread>

#include "core/clock.h"
#include "core/errors.h"
#include "core/signals.h"
#include "sweep/ledger.h"

namespace fs = std::filesystem;

namespace biaslab::sweep {
namespace {

using Clock = std::chrono::steady_clock;

std::string quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/=+:@") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The last error line a run logged, for the ledger's reason.
std::string last_error_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, found;
  while (std::getline(in, line))
    if (line.find("[error]") != std::string::npos || line.find("[critical]") != std::string::npos) found = line;
  const auto tag = found.find("] ", found.find("[error]") != std::string::npos ? found.find("[error]") : found.find("[critical]"));
  return tag == std::string::npos ? found : found.substr(tag + 2);
}

std::string format_duration(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 5400) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

// Starts `argv` from the executable open at `exe_fd` (the binary this sweep started
// with, even if a rebuild replaces the file meanwhile), output appended to `log`.
pid_t spawn(int exe_fd, const std::vector<std::string>& argv, const fs::path& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(log.string() + ": cannot open run log: " + std::strerror(errno));
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Prepared before fork: the child only makes system calls.
  const std::string exec_error = "[error] cannot run " + argv.front() + "\n";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    if (null_fd >= 0) ::close(null_fd);
    throw Error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Own process group: a terminal's Ctrl-C reaches only the sweep, which forwards one
    // SIGTERM; and if the sweep dies, the run is told to checkpoint and stop.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(75);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    if (null_fd >= 0) ::dup2(null_fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::fexecve(exe_fd, args.data(), environ);
    if (::write(2, exec_error.data(), exec_error.size()) < 0) {
    }
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from this side, so the group exists before we might signal it
  ::close(fd);
  if (null_fd >= 0) ::close(null_fd);
  return pid;
}

// Waits (up to two minutes) for a process left by a dead sweep to finish its checkpoint.
void wait_for_exit(long pid, const std::string& run) {
  if (pid <= 0) return;
  for (int i = 0; i < 1200 && ::kill(pid_t(pid), 0) == 0; ++i) {
    if (i == 0) spdlog::info("{}: waiting for pid {} to checkpoint and exit", run, pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

std::string describe_exit(int status) {
  switch (status) {
    case 0: return "finished";
    case 1: return "unexpected error (exit 1)";
    case 2: return "config error (exit 2)";
    case 3: return "data error (exit 3)";
    case 4: return "non-finite loss or gradients (exit 4)";
    case 5: return "checkpoint or run directory error (exit 5)";
    case 75: return "interrupted after a checkpoint (exit 75)";
    case 127: return "could not start biaslab (exit 127)";
    default:
      if (status > 128) {
        const int sig = status - 128;
        return fmt::format("killed by signal {} ({}){}", sig, strsignal(sig),
                           sig == SIGKILL ? "; out of memory?" : "");
      }
      return fmt::format("exit {}", status);
  }
}

std::string train_command(const std::string& exe, const Layout& layout, const std::string& run) {
  return quote(exe) + " train -c " + quote(fs::absolute(layout.config(run)).lexically_normal().string()) + " --out " +
         quote(fs::absolute(layout.run_dir(run)).lexically_normal().string());
}

std::unique_ptr<FileLock> lock_sweep_dir(const Layout& layout) {
  fs::create_directories(layout.root);
  auto lock = std::make_unique<FileLock>(layout.lock());
  if (!lock->held())
    throw CheckpointError("sweep directory " + layout.root.string() + " is in use by another biaslab sweep" +
                          (lock->holder_pid() ? " (pid " + std::to_string(lock->holder_pid()) + ")" : std::string()) +
                          "; wait for it or stop it first");
  return lock;
}

ExecSummary execute(const Layout& layout, const Plan& plan, const ExecOptions& options) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int jobs = std::max(1, options.jobs);
  const int threads = options.threads > 0 ? options.threads : std::max(1, cores / jobs);

  Ledger ledger(layout.ledger());
  ExecSummary result;
  std::deque<std::string> queue;
  for (const auto& run : plan.runs) {
    LedgerEntry& e = ledger[run.name];
    const bool has_summary = fs::exists(layout.run_dir(run.name) / "summary.json");
    if (e.state == "running") {
      // The caller holds the lock, so the sweep that recorded this is gone. Its run got
      // SIGTERM from the parent-death signal and may still be writing its checkpoint.
      spdlog::warn("{}: left 'running' by a sweep that died (pid {}); resuming it", run.name, e.pid);
      wait_for_exit(e.pid, run.name);
      e.state = "interrupted";
      e.reason = "the sweep running it died";
    }
    if (options.restart.count(run.name)) e = LedgerEntry{};
    if (has_summary && e.state == "failed") e.state = "done";  // completed since, e.g. by an emitted command
    if (e.state == "done" && has_summary) {
      ++result.done;
    } else if (e.state == "failed" && !options.retry_failed) {
      ++result.failed;
    } else {
      queue.push_back(run.name);
    }
  }
  ledger.save();
  const int total = int(plan.runs.size());
  spdlog::info("sweep {}: {} runs ({} done, {} failed{}, {} to run) in {}; {} job(s) x {} thread(s)", plan.name, total,
               result.done, result.failed, result.failed && !options.retry_failed ? " - rerun with --retry-failed" : "",
               queue.size(), layout.root.string(), jobs, threads);

  struct Running {
    std::string name;
    Clock::time_point start;
  };
  std::map<pid_t, Running> running;
  const int exe_fd = ::open(options.exe.c_str(), O_RDONLY | O_CLOEXEC);
  if (exe_fd < 0) throw Error(options.exe + ": cannot open the biaslab executable: " + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } exe_closer{exe_fd};
  // On an error of the sweep itself (a full disk, say): stop the runs cleanly and
  // record them as interrupted before reporting it.
  struct StopRunsOnError {
    std::map<pid_t, Running>& running;
    Ledger& ledger;
    ~StopRunsOnError() {
      if (running.empty()) return;
      for (const auto& [pid, r] : running) ::kill(pid, SIGTERM);
      for (const auto& [pid, r] : running) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        LedgerEntry& e = ledger[r.name];
        e.state = "interrupted";
        e.reason = "the sweep stopped on an error";
        e.pid = 0;
      }
      try {
        ledger.save();
      } catch (const std::exception&) {
      }
    }
  } stop_runs_on_error{running, ledger};
  double finished_seconds = 0.0;
  int finished_count = 0;
  bool forwarded = false;
  install_stop_handlers();

  auto progress = [&] {
    const int left = int(queue.size() + running.size());
    std::string eta;
    if (finished_count > 0 && left > 0)
      eta = ", ETA " + format_duration(finished_seconds / finished_count * left / std::min<int>(jobs, left));
    return fmt::format("{} done, {} failed{}, {} remaining{}", result.done, result.failed,
                       result.interrupted ? fmt::format(", {} interrupted", result.interrupted) : "", left, eta);
  };

  while (!queue.empty() || !running.empty()) {
    if (stop_signal() && !forwarded) {
      spdlog::warn("stopping: asking {} running run(s) to checkpoint; {} not started", running.size(), queue.size());
      for (const auto& [pid, r] : running) ::kill(pid, SIGTERM);
      forwarded = true;
      result.stopped = true;
      queue.clear();
    }
    while (!stop_signal() && int(running.size()) < jobs && !queue.empty()) {
      const std::string name = queue.front();
      queue.pop_front();
      std::vector<std::string> argv = {options.exe, "train", "-c", layout.config(name).string(), "--out",
                                       layout.run_dir(name).string(), "--set", "runtime.threads=" + std::to_string(threads)};
      if (options.restart.count(name)) argv.push_back("--force");
      LedgerEntry& e = ledger[name];
      {
        std::ofstream log(layout.log(name), std::ios::app);
        std::string cmd;
        for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + quote(a);
        log << "=== biaslab sweep: attempt " << e.attempts + 1 << " at " << now_iso8601() << ": " << cmd << "\n";
      }
      const pid_t pid = spawn(exe_fd, argv, layout.log(name));
      running[pid] = Running{name, Clock::now()};
      e.state = "running";
      e.pid = pid;
      e.attempts += 1;
      e.started = now_iso8601();
      e.reason.clear();
      ledger.save();
      spdlog::info("start  {} ({})", name, progress());
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    if (pid < 0) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const Running r = it->second;
    running.erase(it);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const double seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
    LedgerEntry& e = ledger[r.name];
    e.exit_status = code;
    e.finished = now_iso8601();
    e.duration_s = seconds;
    e.pid = 0;
    const bool complete = code == 0 && fs::exists(layout.run_dir(r.name) / "summary.json");
    if (complete) {
      e.state = "done";
      ++result.done;
      finished_seconds += seconds;
      ++finished_count;
      spdlog::info("done   {} in {} ({})", r.name, format_duration(seconds), progress());
    } else if (code == 75 || (result.stopped && (code == 128 + SIGTERM || code == 128 + SIGINT))) {
      e.state = "interrupted";
      e.reason = describe_exit(code);
      ++result.interrupted;
      spdlog::warn("interrupted {} after {}; rerun the sweep to resume it", r.name, format_duration(seconds));
    } else {
      e.state = "failed";
      const std::string detail = last_error_line(layout.log(r.name));
      e.reason = code == 0 ? "exited 0 without writing summary.json" : describe_exit(code);
      if (!detail.empty()) e.reason += ": " + detail;
      ++result.failed;
      spdlog::error("failed {}: {} (log: {}) ({})", r.name, e.reason, layout.log(r.name).string(), progress());
    }
    ledger.save();
  }
  spdlog::info("sweep {}: {} of {} runs done, {} failed, {} interrupted", plan.name, result.done, total, result.failed,
               result.interrupted);
  return result;
}

}  // namespace biaslab::sweep
