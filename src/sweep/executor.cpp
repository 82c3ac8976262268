#include "sweep/executor.h"

#include <fcntl.h>
#include <unistd.h>

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
#include "core/subprocess.h"
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

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// Starts `argv` from the executable open at `exe_fd` (the binary this sweep started
// with, even if a rebuild replaces the file meanwhile), output appended to `log`. A run
// whose sweep died before it was set up exits as interrupted (75).
pid_t spawn(Supervisor& children, int exe_fd, const std::vector<std::string>& argv, const fs::path& log) {
  const FdCloser out{::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
  if (out.fd < 0) throw Error(log.string() + ": cannot open run log: " + std::strerror(errno));
  const FdCloser null_in{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  ChildSpec spec;
  spec.argv = argv;
  spec.program_fd = exe_fd;
  spec.stdin_fd = null_in.fd;
  spec.output_fd = out.fd;
  spec.exec_failure_message = "[error] cannot run " + argv.front() + "\n";
  spec.orphaned_status = kExitInterrupted;
  return children.spawn(spec);
}

// Waits (up to two minutes) for a process left by a dead sweep to finish its checkpoint.
void wait_for_exit(long pid, const std::string& run) {
  if (pid <= 0) return;
  for (int i = 0; i < 1200 && ::kill(pid_t(pid), 0) == 0; ++i) {
    if (i == 0) spdlog::info("{}: waiting for pid {} to checkpoint and exit", run, pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Reconciles the ledger with the plan and the run directories; returns the runs to start
// and counts those already done (or failed, unless retried) in `result`.
std::deque<std::string> runs_to_start(const Layout& layout, const Plan& plan, const ExecOptions& options,
                                      Ledger& ledger, ExecSummary& result) {
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
  return queue;
}

// The runs of one execute() call: at most `jobs` at a time, each a child process whose
// end is recorded in the ledger.
class RunPool {
 public:
  RunPool(const Layout& layout, const ExecOptions& options, int jobs, int threads, Ledger& ledger, ExecSummary& result,
          std::deque<std::string> queue)
      : layout_(layout), options_(options), jobs_(jobs), threads_(threads), ledger_(ledger), result_(result),
        queue_(std::move(queue)), exe_{::open(options.exe.c_str(), O_RDONLY | O_CLOEXEC)} {
    if (exe_.fd < 0) throw Error(options.exe + ": cannot open the biaslab executable: " + std::strerror(errno));
  }
  // On an error of the sweep itself (a full disk, say): stop the runs cleanly and
  // record them as interrupted before reporting it.
  ~RunPool() {
    if (running_.empty()) return;
    children_.terminate(options_.stop_grace);  // SIGKILL to those still running after the grace
    try {
      while (children_.wait()) {
      }
    } catch (const std::exception&) {
    }
    for (const auto& [pid, r] : running_) {
      LedgerEntry& e = ledger_[r.name];
      e.state = "interrupted";
      e.reason = "the sweep stopped on an error";
      e.pid = 0;
    }
    try {
      ledger_.save();
    } catch (const std::exception&) {
    }
  }

  void run() {
    install_stop_handlers();
    bool forwarded = false;
    while (!queue_.empty() || !running_.empty()) {
      if (stop_signal() && !forwarded) {
        spdlog::warn("stopping: asking {} running run(s) to checkpoint; {} not started", running_.size(), queue_.size());
        children_.terminate(options_.stop_grace);
        forwarded = true;
        result_.stopped = true;
        queue_.clear();
      }
      while (!stop_signal() && int(running_.size()) < jobs_ && !queue_.empty()) {
        const std::string name = queue_.front();
        queue_.pop_front();
        start(name);
      }
      if (const auto exit = children_.wait(std::chrono::milliseconds(100))) finish(*exit);
    }
  }

 private:
  struct Running {
    std::string name;
    Clock::time_point start;
  };

  void start(const std::string& name) {
    std::vector<std::string> argv = {options_.exe, "train", "-c", layout_.config(name).string(), "--out",
                                     layout_.run_dir(name).string(), "--set", "runtime.threads=" + std::to_string(threads_)};
    if (options_.restart.count(name)) argv.push_back("--force");
    LedgerEntry& e = ledger_[name];
    {
      std::ofstream log(layout_.log(name), std::ios::app);
      std::string cmd;
      for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + quote(a);
      log << "=== biaslab sweep: attempt " << e.attempts + 1 << " at " << now_iso8601() << ": " << cmd << "\n";
    }
    const pid_t pid = spawn(children_, exe_.fd, argv, layout_.log(name));
    running_[pid] = Running{name, Clock::now()};
    e.state = "running";
    e.pid = pid;
    e.attempts += 1;
    e.started = now_iso8601();
    e.reason.clear();
    ledger_.save();
    spdlog::info("start  {} ({})", name, progress());
  }

  void finish(const ChildExit& exit) {
    auto it = running_.find(exit.pid);
    if (it == running_.end()) return;
    const Running r = it->second;
    running_.erase(it);
    const int code = exit.code();
    const double seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
    LedgerEntry& e = ledger_[r.name];
    e.exit_status = code;
    e.finished = now_iso8601();
    e.duration_s = seconds;
    e.pid = 0;
    const bool complete = code == 0 && fs::exists(layout_.run_dir(r.name) / "summary.json");
    if (complete) {
      e.state = "done";
      ++result_.done;
      finished_seconds_ += seconds;
      ++finished_count_;
      spdlog::info("done   {} in {} ({})", r.name, format_duration(seconds), progress());
    } else if (code == kExitInterrupted || (result_.stopped && (code == 128 + SIGTERM || code == 128 + SIGINT ||
                                                                 code == 128 + SIGKILL))) {
      // SIGKILL while stopping: this sweep's, after the grace; it resumes from its last checkpoint.
      e.state = "interrupted";
      e.reason = code == 128 + SIGKILL ? fmt::format("did not stop within {:g} s of SIGTERM; killed",
                                                     options_.stop_grace.count() / 1000.0)
                                       : describe_exit(code);
      ++result_.interrupted;
      spdlog::warn("interrupted {} after {}; rerun the sweep to resume it", r.name, format_duration(seconds));
    } else {
      e.state = "failed";
      const std::string detail = last_error_line(layout_.log(r.name));
      e.reason = code == 0 ? "exited 0 without writing summary.json" : describe_exit(code);
      if (!detail.empty()) e.reason += ": " + detail;
      ++result_.failed;
      spdlog::error("failed {}: {} (log: {}) ({})", r.name, e.reason, layout_.log(r.name).string(), progress());
    }
    ledger_.save();
    if (options_.on_run_end) options_.on_run_end();
  }

  std::string progress() const {
    const int left = int(queue_.size() + running_.size());
    std::string eta;
    if (finished_count_ > 0 && left > 0)
      eta = ", ETA " + format_duration(finished_seconds_ / finished_count_ * left / std::min<int>(jobs_, left));
    return fmt::format("{} done, {} failed{}, {} remaining{}", result_.done, result_.failed,
                       result_.interrupted ? fmt::format(", {} interrupted", result_.interrupted) : "", left, eta);
  }

  const Layout& layout_;
  const ExecOptions& options_;
  const int jobs_, threads_;
  Ledger& ledger_;
  ExecSummary& result_;
  std::deque<std::string> queue_;  // runs not started yet
  const FdCloser exe_;
  Supervisor children_;  // after exe_: its runs are reaped before the executable is closed
  std::map<pid_t, Running> running_;
  double finished_seconds_ = 0.0;
  int finished_count_ = 0;
};

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
  std::deque<std::string> queue = runs_to_start(layout, plan, options, ledger, result);
  const int total = int(plan.runs.size());
  spdlog::info("sweep {}: {} runs ({} done, {} failed{}, {} to run) in {}; {} job(s) x {} thread(s)", plan.name, total,
               result.done, result.failed, result.failed && !options.retry_failed ? " - rerun with --retry-failed" : "",
               queue.size(), layout.root.string(), jobs, threads);
  RunPool(layout, options, jobs, threads, ledger, result, std::move(queue)).run();
  spdlog::info("sweep {}: {} of {} runs done, {} failed, {} interrupted", plan.name, result.done, total, result.failed,
               result.interrupted);
  return result;
}

}  // namespace biaslab::sweep
