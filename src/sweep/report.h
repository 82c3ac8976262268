#pragma once
// `biaslab report SWEEP_DIR`: the sweep's runs as tables, plots and a short verdict.
//
//   results.csv   one row per run: swept values, state, metrics, parameters, FLOPs,
//                 images seen, times
//   summary.csv   one row per configuration (runs grouped over seed keys): n, mean,
//                 sample sd, 95% t-interval of the metric
//   summary.md    the same as a Markdown table, with the verdict
//   *.png         metric against training-set size (log x, one line per series,
//                 95% CI bars), grouped bars, learning curves
//   paired.csv    per-seed paired differences between the series values
//   tuning.csv    a tuned sweep's tuning runs (sweep/tuner.h)
//   budget.csv    where the sweep varies train.epochs or train.steps: the paired change
//                 from each budget to the next larger one, and whether it converged
//   report.md     all of it on one page, with warnings (runs whose config is not the
//                 planned one) and each run's regime (sweep/regime.h)
#include <filesystem>
#include <string>
#include <vector>

#include "sweep/plan.h"
#include "sweep/regime.h"
#include "sweep/results.h"
#include "sweep/stats.h"

namespace biaslab::sweep {

/// One configuration: the runs that differ only in seed keys.
struct Group {
  std::vector<std::string> values;    ///< of the group keys
  std::vector<const RunResult*> runs; ///< planned runs of this configuration
  Stats stats;                        ///< over the complete runs' metric
  std::string family;                 ///< model family when all runs share it
  double train_size = 0.0;            ///< mean training-set size of the complete runs
};

struct Grouping {
  std::vector<std::string> keys;  ///< axis keys that are not seeds
  std::string x;                  ///< the data-size / x-axis key, or ""
  std::vector<Group> groups;      ///< in plan order
};

Grouping group_results(const Plan& plan, const std::vector<RunResult>& results);

/// The verdict paragraph(s) in Markdown.
std::string verdict(const Plan& plan, const Grouping& grouping);

struct ReportOutput {
  std::vector<std::filesystem::path> files;
  std::string summary_markdown;  ///< table + verdict, also printed by the command
};

/// `plan` with `series` as the key that names the lines, bars and paired comparisons
/// (`biaslab report --series KEY`), e.g. model.residual to pair residual on and off
/// within each (model, norm). `series` must be an axis of the sweep (the first key of a
/// zip group), not a seed key and not the report's x axis; ConfigError listing the
/// axes otherwise. The sweep's report.gap names values of its own series and is dropped.
Plan with_series(Plan plan, const std::string& series);

/// Writes every report file into `out_dir` (created).
ReportOutput write_report(const Layout& layout, const Plan& plan, const std::filesystem::path& out_dir,
                          const RegimeRule& rule = {});

}  // namespace biaslab::sweep
