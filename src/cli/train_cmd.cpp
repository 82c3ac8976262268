// biaslab train -c CONFIG [--set k=v]... [--out DIR] [--force] [--print-config]
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "config/loader.h"
#include "engine/experiment.h"

namespace biaslab::cli {

void register_train(CLI::App& app) {
  struct Args {
    std::string config;
    std::vector<std::string> sets;
    std::string out;
    bool force = false;
    bool print_config = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model from a YAML config");
  cmd->add_option("-c,--config", args->config, "experiment YAML (configs/*.yaml)")->required();
  cmd->add_option("--set", args->sets, "override a config value, e.g. --set model.depth=4 (repeatable)");
  cmd->add_option("--out", args->out, "run directory (default: runs/<name>)");
  cmd->add_flag("--force", args->force, "replace an earlier run in the run directory");
  cmd->add_flag("--print-config", args->print_config, "print the resolved config and exit");
  cmd->callback([args] {
    const Config cfg = load_config(args->config, args->sets);
    if (args->print_config) {
      std::cout << to_yaml(cfg);
      return;
    }
    TrainRequest req;
    req.run_dir = args->out.empty() ? std::filesystem::path("runs") / cfg.name : std::filesystem::path(args->out);
    req.force = args->force;
    req.command_line = command_line();
    const auto summary = run_training(cfg, req);
    std::cout << "run directory: " << req.run_dir.string() << "\n"
              << "final test accuracy: " << fmt::format("{:.2f}%", 100 * summary["final"]["test_acc"].get<double>())
              << "\n";
  });
}

}  // namespace biaslab::cli
