#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <cstdlib>

#include "core/errors.h"
#include "core/signals.h"
#include "sweep/executor.h"
#include "sweep/ledger.h"
#include "test_util.h"

using namespace biaslab;
using namespace biaslab::sweep;
namespace fs = std::filesystem;

namespace {

// Two runs of a stand-in for `biaslab train`: `stuck` ignores SIGTERM (a run blocked in
// a collective or a write) and would sleep 60 s; `quick` exits 3 once `stuck` has set up
// its signal disposition, so the sweep starts stopping while `stuck` cannot be asked to.
// The sweep runs its executable from an open descriptor (fexecve), which cannot start a
// script; env(1) is a binary and runs the script `train` from PATH instead.
struct StuckSweep {
  test::TempDir dir;
  Layout layout{dir / "sweep"};
  Plan plan;
  ExecOptions options;
  std::string old_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  StuckSweep() {
    fs::create_directories(layout.root / "logs");
    fs::create_directories(dir / "bin");
    const fs::path ready = dir / "stuck.ready";
    const fs::path script = dir / "bin" / "train";
    test::write_text(script, "#!/bin/sh\ncase \"$*\" in\n"
                             "  *runs/stuck*) trap '' TERM; touch '" + ready.string() + "'; exec sleep 60;;\n"
                             "  *) while [ ! -e '" + ready.string() + "' ]; do sleep 0.05; done; exit 3;;\n"
                             "esac\n");
    ::chmod(script.c_str(), 0755);
    ::setenv("PATH", ((dir / "bin").string() + ":" + old_path).c_str(), 1);
    plan.name = "stuck";
    plan.runs = {PlannedRun{"quick", {}, {}, ""}, PlannedRun{"stuck", {}, {}, ""}};
    options.jobs = 2;
    options.threads = 1;
    options.exe = "/usr/bin/env";
    options.stop_grace = std::chrono::seconds(1);
  }
  ~StuckSweep() { ::setenv("PATH", old_path.c_str(), 1); }
  LedgerEntry entry(const std::string& run) const { return Ledger(layout.ledger()).entries().at(run); }
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

// The sweep's own error (here: thrown after a run's end is recorded) stops the other runs:
// SIGTERM, then SIGKILL after the grace, so a run that ignores SIGTERM cannot keep the
// sweep alive (it would for the 60 s of its sleep, or forever, without the deadline).
TEST(SweepExecutor, AnErrorStopsARunThatIgnoresSigtermWithinTheGrace) {
  StuckSweep s;
  s.options.on_run_end = [] { throw Error("disk full (simulated)"); };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(execute(s.layout, s.plan, s.options), Error);
  EXPECT_LT(seconds_since(start), 30.0);
  EXPECT_EQ(s.entry("quick").state, "failed");
  EXPECT_EQ(s.entry("stuck").state, "interrupted");
  EXPECT_EQ(s.entry("stuck").reason, "the sweep stopped on an error");
}

// A stop signal (SIGTERM to the sweep) takes the same path: the stuck run is killed after
// the grace and recorded as interrupted, to be resumed by the next sweep.
TEST(SweepExecutor, AStopSignalKillsARunThatIgnoresSigtermAfterTheGrace) {
  StuckSweep s;
  s.options.on_run_end = [] { std::raise(SIGTERM); };  // the sweep's handler records it
  const auto start = std::chrono::steady_clock::now();
  const ExecSummary result = execute(s.layout, s.plan, s.options);
  reset_stop_signal();
  EXPECT_LT(seconds_since(start), 30.0);
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.interrupted, 1);
  EXPECT_EQ(s.entry("stuck").state, "interrupted");
  EXPECT_EQ(s.entry("stuck").reason, "did not stop within 1 s of SIGTERM; killed");
}
