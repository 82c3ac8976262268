// biaslab compare REFERENCE_DIR DIR... [--metric M] [--out DIR]
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "sweep/compare.h"
#include "sweep/spec.h"

namespace fs = std::filesystem;

namespace biaslab::cli {

void register_compare(CLI::App& app) {
  struct Args {
    std::vector<std::string> dirs;
    std::string metric;
    std::string out;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "compare", "Paired differences between the runs of several sweep directories (same seeds), e.g. two recipes");
  cmd->add_option("sweep_dirs", args->dirs,
                   "the reference sweep directory, then the ones compared with it (made by `biaslab sweep`)")
      ->required()
      ->expected(2, -1);
  cmd->add_option("--metric", args->metric,
                  "compare this accuracy (default: the reference sweep's report.metric), e.g. final.ema_test_acc")
      ->check(CLI::Validator([](std::string& v) { return sweep::report_metric_problem(v); }, "METRIC"));
  cmd->add_option("--out", args->out, "also write compare.md, arms.csv and pairs.csv into this folder");
  cmd->callback([args] {
    const std::vector<fs::path> dirs(args->dirs.begin(), args->dirs.end());
    const auto c = sweep::compare_sweeps(dirs, args->metric, args->out);
    std::cout << c.markdown;
    if (args->out.empty()) return;
    for (const auto& f : sweep::write_comparison(c, args->out)) std::cout << "wrote " << f.string() << "\n";
  });
}

}  // namespace biaslab::cli
