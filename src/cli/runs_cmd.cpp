// biaslab runs [DIR] [--csv] [--sort KEY]
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "engine/run_table.h"

namespace biaslab::cli {

void register_runs(CLI::App& app) {
  struct Args {
    std::string dir = "runs";
    std::string sort;
    bool csv = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("runs", "List the run directories under a folder (sweeps included) as a table");
  cmd->add_option("dir", args->dir, "folder to search, recursively")->capture_default_str();
  cmd->add_flag("--csv", args->csv, "print CSV (accuracies in percent, time in seconds)");
  cmd->add_option("--sort", args->sort,
                  "sort by a column: name, family, preset, train_size, steps, planned, state, best_acc, final_acc, "
                  "params, time_s (numbers descending)");
  cmd->callback([args] {
    std::vector<RunRow> rows = list_runs(args->dir);
    if (!args->sort.empty()) sort_runs(rows, args->sort);
    std::cout << (args->csv ? runs_csv(rows) : runs_text(rows));
  });
}

}  // namespace biaslab::cli
