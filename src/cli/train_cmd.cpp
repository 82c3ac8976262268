// biaslab train -c CONFIG [--set k=v]... [--out DIR] [--force] [--print-config]
// biaslab train --resume RUN_DIR [--set k=v]...
// Either with --nproc N: N data-parallel ranks on this machine (distributed/launch.h).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "config/loader.h"
#include "core/errors.h"
#include "distributed/env.h"
#include "distributed/launch.h"
#include "engine/experiment.h"
#include "engine/trained_run.h"

namespace biaslab::cli {

void register_train(CLI::App& app) {
  struct Args {
    std::string config;
    std::string resume;
    std::vector<std::string> sets;
    std::string out;
    bool force = false;
    bool print_config = false;
    int nproc = 1;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model from a YAML config (resumes a run it finds in --out)");
  auto* config = cmd->add_option("-c,--config", args->config, "experiment YAML (configs/*.yaml)");
  auto* resume = cmd->add_option("--resume", args->resume, "resume the run in this directory from its checkpoint");
  config->excludes(resume);
  cmd->add_option("--set", args->sets, "override a config value, e.g. --set model.depth=4 (repeatable)");
  auto* out = cmd->add_option("--out", args->out, "run directory (default: runs/<name>)");
  out->excludes(resume);
  cmd->add_flag("--force", args->force, "discard an earlier run in the run directory and start over")->excludes(resume);
  cmd->add_flag("--print-config", args->print_config, "print the resolved config and exit");
  cmd->add_option("--nproc", args->nproc,
                  "train data-parallel with N processes on this machine (as torchrun --nproc_per_node N would)")
      ->check(CLI::Range(1, 256));
  cmd->callback([args] {
    if (args->config.empty() && args->resume.empty())
      throw CLI::RequiredError("train: --config (or --resume RUN_DIR)");
    const Config cfg = args->resume.empty() ? load_config(args->config, args->sets)
                                            : load_run_config(args->resume, args->sets);
    if (args->print_config) {
      std::cout << to_yaml(cfg);
      return;
    }
    if (args->nproc > 1) {
      if (dist::read_dist_env().distributed())
        throw ConfigError("--nproc: this process is already a rank of a distributed job (WORLD_SIZE or Slurm "
                          "variables are set); launch with either torchrun/srun or --nproc, not both");
      const int status = dist::launch_local(args->nproc, arguments(),
                                            std::chrono::seconds(cfg.runtime.dist_timeout_s));
      if (status != 0) throw ExitWith(status);
      return;
    }
    TrainRequest req;
    if (!args->resume.empty()) {
      req.run_dir = args->resume;
      req.require_checkpoint = true;
    } else {
      req.run_dir = args->out.empty() ? std::filesystem::path("runs") / cfg.name : std::filesystem::path(args->out);
    }
    req.force = args->force;
    const char* launched = std::getenv("BIASLAB_LAUNCH_COMMAND");  // a rank of `train --nproc`
    req.command_line = launched && *launched ? launched : command_line();
    const auto summary = run_training(cfg, req);
    if (summary.is_null()) return;  // a rank other than 0 of a distributed run: rank 0 reports
    std::cout << "run directory: " << req.run_dir.string() << "\n"
              << "final test accuracy: " << fmt::format("{:.2f}%", 100 * summary["final"]["test_acc"].get<double>())
              << "\n";
  });
}

}  // namespace biaslab::cli
