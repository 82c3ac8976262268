#pragma once
// Runs a sweep's planned runs on this machine, each as its own `biaslab train`
// process (a crash or out-of-memory kill in one cannot take the others down), `jobs`
// at a time with the cores divided between them. The caller holds the sweep
// directory's lock (lock_sweep_dir); execute keeps the ledger, skips finished runs; resumes interrupted ones (also those a dead
// sweep left "running"); retries failed ones only when asked. SIGINT/SIGTERM stop it
// gracefully: running runs get SIGTERM, checkpoint and are recorded as interrupted; one
// still running `stop_grace` later (stuck in a collective or a blocked write) gets
// SIGKILL. An error of the sweep itself stops its runs the same way before it is reported.
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "core/file_lock.h"
#include "sweep/plan.h"

namespace biaslab::sweep {

struct ExecOptions {
  int jobs = 1;
  int threads = 0;            ///< per run; 0 = cores / jobs (at least 1)
  bool retry_failed = false;
  std::string exe;            ///< the biaslab executable to run
  std::set<std::string> restart;  ///< runs to start over (train --force)
  std::chrono::milliseconds stop_grace{std::chrono::seconds(120)};  ///< SIGTERM to SIGKILL when stopping
  std::function<void()> on_run_end;  ///< called after each run's end is in the ledger
};

struct ExecSummary {
  int done = 0, failed = 0, interrupted = 0;
  bool stopped = false;  ///< by a signal
};

/// Locks the sweep directory for this process (CheckpointError when another sweep
/// holds it). The lock ends with the process, however it ends.
std::unique_ptr<FileLock> lock_sweep_dir(const Layout& layout);

ExecSummary execute(const Layout& layout, const Plan& plan, const ExecOptions& options);

/// The `biaslab train` command of one run (shell-quoted), as the executor runs it
/// minus the thread count: what `--emit commands` prints.
std::string train_command(const std::string& exe, const Layout& layout, const std::string& run);

/// Exit status explained, e.g. "config error (exit 2)" or "killed by signal 9".
std::string describe_exit(int status);

}  // namespace biaslab::sweep
