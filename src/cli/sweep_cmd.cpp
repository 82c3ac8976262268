// biaslab sweep -c SWEEP [--out DIR] [--jobs N] [--threads T] [--retry-failed] [--force]
//               [--dry-run] [--emit commands|slurm]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/errors.h"
#include "sweep/emit.h"
#include "sweep/executor.h"
#include "sweep/ledger.h"

namespace fs = std::filesystem;

namespace biaslab::cli {

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
  cmd->add_flag("--dry-run", args->dry_run, "list the runs and their states; write nothing");
  cmd->add_option("--emit", args->emit, "print one command per run (commands) or write a Slurm array job (slurm)")
      ->check(CLI::IsMember({"commands", "slurm"}));
  cmd->add_option("--cpus-per-task", args->cpus_per_task, "with --emit slurm: CPUs (and threads) per run")
      ->check(at_least(1));
  cmd->callback([args] {
    using namespace sweep;
    const SweepSpec spec = load_sweep(args->file);
    const Plan plan = make_plan(spec);
    const std::vector<std::string> configs = resolve_configs(spec, plan);  // every run checked up front
    const Layout layout{args->out.empty() ? fs::path("runs") / "sweeps" / spec.name : fs::path(args->out)};
    const std::string exe = fs::read_symlink("/proc/self/exe").string();
    claim_sweep_dir(layout);

    if (args->dry_run) {
      const Ledger ledger(layout.ledger());
      std::cout << fmt::format("sweep {}: {} runs in {}\n", plan.name, plan.runs.size(), layout.root.string());
      for (size_t i = 0; i < plan.runs.size(); ++i) {
        const auto it = ledger.entries().find(plan.runs[i].name);
        std::cout << fmt::format("{:>4}  {:<11}  {}\n", i, it == ledger.entries().end() ? "new" : it->second.state,
                                 plan.runs[i].name);
      }
      return;
    }
    const auto lock = lock_sweep_dir(layout);
    const auto restart = prepare(layout, spec, plan, configs, args->force);
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
    options.restart = restart;
    const ExecSummary result = execute(layout, plan, options);
    std::cout << fmt::format("sweep {}: {} done, {} failed, {} interrupted of {} runs; report with: biaslab report {}\n",
                             plan.name, result.done, result.failed, result.interrupted, plan.runs.size(),
                             layout.root.string());
    if (result.stopped || result.interrupted) throw Interrupted("sweep stopped; rerun the same command to resume");
    if (result.failed) throw SweepFailed(fmt::format("{} run(s) failed (see the ledger and logs/ in {}); rerun with "
                                                     "--retry-failed to try them again",
                                                     result.failed, layout.root.string()));
  });
}

}  // namespace biaslab::cli
