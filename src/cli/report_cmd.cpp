// biaslab report SWEEP_DIR [--out DIR] [--metric M] [--series KEY] [--converged-tail F] [--converged-gain G]
//                [--fit-gap G] [--fit-level L] [--converged-delta D]
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "sweep/report.h"
#include "sweep/spec.h"

namespace fs = std::filesystem;

namespace biaslab::cli {

void register_report(CLI::App& app) {
  struct Args {
    std::string dir;
    std::string out;
    std::string metric;
    std::string series;
    sweep::RegimeRule rule;
    double delta = -1.0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("report", "Tables, plots and a verdict for a sweep directory");
  cmd->add_option("sweep_dir", args->dir, "directory made by `biaslab sweep` (or --emit)")->required();
  cmd->add_option("--out", args->out, "where to write the report (default: SWEEP_DIR/report; with --metric or --series, "
                  "SWEEP_DIR/report-METRIC, SWEEP_DIR/report-by-KEY or SWEEP_DIR/report-METRIC-by-KEY)");
  cmd->add_option("--metric", args->metric,
                  "report this accuracy instead of the sweep's report.metric, e.g. final.ema_test_acc or final.val_acc")
      ->check(CLI::Validator([](std::string& v) { return sweep::report_metric_problem(v); }, "METRIC"));
  cmd->add_option("--series", args->series,
                  "compare the values of this swept key instead of the sweep's report.series, e.g. model.residual: "
                  "paired differences within each configuration of the other keys");
  cmd->add_option("--converged-tail", args->rule.tail,
                  "share of a run's last steps whose clean training-accuracy rise the regime rule looks at (default 0.2)")
      ->check(CLI::Range(0.01, 0.99));
  cmd->add_option("--converged-gain", args->rule.min_gain,
                  "training-accuracy rise over that tail (0.005 = 0.5 points) above which a run that does not fit its "
                  "data underfits rather than plateaus")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--fit-gap", args->rule.fit_gap,
                  "clean training minus held-out accuracy above which a run fits its training data (default 0.03)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--fit-level", args->rule.fit_level,
                  "clean training accuracy at or above which a run fits its training data (default 0.99)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--converged-delta", args->delta,
                  "with a budget axis: largest paired change to the next budget that counts as converged "
                  "(default: the sweep's report.converged_delta, 0.003 = 0.3 points)")
      ->check(CLI::Range(0.0, 0.999999));
  cmd->callback([args] {
    const sweep::Layout layout{args->dir};
    sweep::Plan plan = sweep::read_plan(layout.root);
    fs::path out = args->out.empty() ? layout.root / "report" : fs::path(args->out);
    // Another metric or series goes beside the sweep's own report, never over it.
    if (!args->metric.empty()) plan.report.metric = args->metric;
    if (!args->series.empty()) plan = sweep::with_series(std::move(plan), args->series);
    if (args->delta >= 0) plan.report.converged_delta = args->delta;
    if (args->out.empty() && !(args->metric.empty() && args->series.empty())) {
      std::string name = "report";
      if (!args->metric.empty()) name += "-" + args->metric;
      if (!args->series.empty()) name += "-by-" + args->series;
      out = layout.root / name;
    }
    const auto report = sweep::write_report(layout, plan, out, args->rule);
    std::cout << report.summary_markdown << "\n";
    for (const auto& f : report.files) std::cout << "wrote " << f.string() << "\n";
  });
}

}  // namespace biaslab::cli
