// biaslab sweep -c SWEEP [--out DIR] [--jobs N] [--threads T] [--retry-failed] [--force]
//               [--dry-run] [--emit commands|slurm]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/errors.h"
#include "sweep/emit.h"
#include "sweep/executor.h"
#include "sweep/ledger.h"
#include "sweep/tuner.h"

namespace fs = std::filesystem;

namespace biaslab::cli {
namespace {

// Why the directory would be refused without --force ("" = it would not): a tuning run
// or a seeded run whose config changed, new or removed runs, other swept keys.
std::string refusal(const sweep::Tuner* tuner, const sweep::PlanChanges& changes) {
  if (tuner && !tuner->changed_runs().empty())
    return "tuning run '" + tuner->changed_runs().front() + "' has a different config";
  return changes.why;
}

// --dry-run: the runs, their ledger states and, for a tuned sweep, the schedule and cells;
// a directory made from another definition says so, and its changed runs show `changed`.
void print_dry_run(std::ostream& out, const sweep::Layout& layout, const sweep::Plan& plan, const sweep::Tuner* tuner,
                   const sweep::PlanChanges& changes) {
  using namespace sweep;
  const Ledger ledger(layout.ledger());
  out << fmt::format("sweep {}: {} runs in {}\n", plan.name, plan.runs.size(), layout.root.string());
  if (const std::string why = refusal(tuner, changes); !why.empty())
    out << "refused without --force: " << different_definition(layout, why) << "\n";
  if (tuner) {
    std::string rungs;
    for (const auto& r : tuner->schedule())
      rungs += fmt::format("{}{} at {:.3g} of the budget", rungs.empty() ? "" : ", then ", r.runs, r.share);
    out << fmt::format("tune: {} cell(s) x {} candidates: {}; {:.2f} runs' budget per cell before its seeded runs{}\n",
                       tuner->cells().size(), tuner->candidates().size(), rungs, halving_cost(tuner->schedule()),
                       tuner->extend() > 0 ? fmt::format(", and up to {} run(s) beyond a grid's end per numeric param (tune.extend)", tuner->extend())
                                  : "");
    for (const auto& cell : tuner->cells())
      out << fmt::format("      cell {}: {}\n", cell.name,
                         cell.decided() ? "chose " + cell.candidates[size_t(cell.chosen)].label
                                        : !cell.failure.empty() ? cell.failure : fmt::format("at rung {}", cell.rung));
  }
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    const auto it = ledger.entries().find(plan.runs[i].name);
    std::string state = it == ledger.entries().end() ? "new" : it->second.state;
    if (tuner && state == "new" && !tuner->cell_of(i).decided()) state = "tuning";
    if (changes.changed.count(plan.runs[i].name)) state = "changed";
    out << fmt::format("{:>4}  {:<11}  {}\n", i, state, plan.runs[i].name);
  }
}

}  // namespace

void register_sweep(CLI::App& app) {
  struct Args {
    std::string file;
    std::string out;
    int jobs = 1;
    int threads = 0;
    bool retry_failed = false;
    bool force = false;
    bool dry_run = false;
    std::string emit;
    int cpus_per_task = 4;
    double stop_grace_s = 120;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run every combination of a sweep file, resumably (one process per run)");
  cmd->add_option("-c,--config", args->file, "sweep YAML (configs/sweeps/*.yaml)")->required();
  cmd->add_option("--out", args->out, "sweep directory (default: runs/sweeps/<name>)");
  cmd->add_option("--jobs,-j", args->jobs, "runs at a time")->check(at_least(1));
  cmd->add_option("--threads", args->threads, "threads per run (default: cores / jobs)")->check(at_least(1));
  cmd->add_flag("--retry-failed", args->retry_failed, "run failed runs again (they are skipped otherwise)");
  cmd->add_flag("--force", args->force,
                "adopt a changed sweep file: runs whose config changed start over (old ones moved to discarded/)");
  cmd->add_option("--stop-grace", args->stop_grace_s,
                  "seconds a run may take to checkpoint and exit after SIGTERM when the sweep stops (a signal or "
                  "its own error) before it is killed with SIGKILL (default 120)")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_flag("--dry-run", args->dry_run, "list the runs and their states; write nothing");
  cmd->add_option("--emit", args->emit, "print one command per run (commands) or write a Slurm array job (slurm)")
      ->check(CLI::IsMember({"commands", "slurm"}));
  cmd->add_option("--cpus-per-task", args->cpus_per_task, "with --emit slurm: CPUs (and threads) per run")
      ->check(at_least(1));
  cmd->callback([args] {
    using namespace sweep;
    const SweepSpec spec = load_sweep(args->file);
    const Plan plan = make_plan(spec);
    const Layout layout{args->out.empty() ? fs::path("runs") / "sweeps" / spec.name : fs::path(args->out)};
    // Every run checked up front. A tuned run's config is known once its cell is decided.
    std::unique_ptr<Tuner> tuner;
    if (spec.tune.enabled()) {
      tuner = std::make_unique<Tuner>(spec, plan, layout);
      tuner->check();
    }
    auto final_configs = [&] {
      if (!tuner) return resolve_configs(spec, plan);
      std::vector<std::string> configs;
      for (size_t i = 0; i < plan.runs.size(); ++i) configs.push_back(tuner->final_config(i));
      return configs;
    };
    const std::string exe = fs::read_symlink("/proc/self/exe").string();
    claim_sweep_dir(layout);
    if (tuner) tuner->refresh();
    std::vector<std::string> configs = final_configs();

    if (args->dry_run) {
      print_dry_run(std::cout, layout, plan, tuner.get(), plan_changes(layout, plan, configs));
      return;
    }
    if (!args->emit.empty() && tuner &&
        std::any_of(configs.begin(), configs.end(), [](const std::string& c) { return c.empty(); }))
      throw ConfigError("--emit: this sweep tunes (tune:) and its cells are not all decided yet; the tuning rungs "
                        "depend on each other's results, so run them with `biaslab sweep -c " + args->file +
                        "` (it can be stopped and resumed), then --emit the seeded runs");
    const auto lock = lock_sweep_dir(layout);
    if (tuner && !tuner->changed_runs().empty() && !args->force)
      throw ConfigError(different_definition(layout, refusal(tuner.get(), {})));
    auto restart = prepare(layout, spec, plan, configs, args->force);
    if (args->emit == "commands") {
      std::cout << command_list(exe, layout, plan);
      return;
    }
    if (args->emit == "slurm") {
      const fs::path script = write_slurm(exe, layout, plan, args->cpus_per_task);
      std::cout << "wrote " << script.string() << " (" << plan.runs.size() << " array tasks); submit with: sbatch "
                << script.string() << "\n";
      return;
    }
    ExecOptions options;
    options.jobs = args->jobs;
    options.threads = args->threads;
    options.retry_failed = args->retry_failed;
    options.exe = exe;
    options.stop_grace = std::chrono::milliseconds(int64_t(args->stop_grace_s * 1000));
    Plan runnable = plan;
    int tuning_failed = 0;
    if (tuner) {
      const ExecSummary t = run_tuning(*tuner, options, args->force);
      std::cout << fmt::format("sweep {}: tuning: {} run(s) done, {} failed (a failed candidate ranks last){}\n",
                               plan.name, t.done, t.failed, t.interrupted ? fmt::format(", {} interrupted", t.interrupted) : "");
      if (t.stopped || t.interrupted) throw Interrupted("sweep stopped while tuning; rerun the same command to resume");
      configs = final_configs();
      for (const auto& name : prepare(layout, spec, plan, configs, args->force)) restart.insert(name);
      runnable.runs.clear();
      Ledger ledger(layout.ledger());
      for (size_t i = 0; i < plan.runs.size(); ++i) {
        const TuneCell& cell = tuner->cell_of(i);
        if (cell.decided()) {
          LedgerEntry& e = ledger[plan.runs[i].name];
          if (e.state == "failed" && e.reason.rfind("tuning failed", 0) == 0) e = LedgerEntry{};  // decided since
          runnable.runs.push_back(plan.runs[i]);
        } else {
          LedgerEntry& e = ledger[plan.runs[i].name];
          e.state = "failed";
          e.reason = cell.failure;
          ++tuning_failed;
        }
      }
      ledger.save();
    }
    options.restart = restart;
    const ExecSummary result = execute(layout, runnable, options);
    const int failed = result.failed + tuning_failed;
    std::cout << fmt::format("sweep {}: {} done, {} failed, {} interrupted of {} runs; report with: biaslab report {}\n",
                             plan.name, result.done, failed, result.interrupted, plan.runs.size(),
                             layout.root.string());
    if (result.stopped || result.interrupted) throw Interrupted("sweep stopped; rerun the same command to resume");
    if (failed) throw SweepFailed(fmt::format("{} run(s) failed (see the ledger and logs/ in {}); rerun with "
                                              "--retry-failed to try them again",
                                              failed, layout.root.string()));
  });
}

}  // namespace biaslab::cli
