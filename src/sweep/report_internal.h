#pragma once
// The parts of `biaslab report` (sweep/report.h) shared by report.cpp (grouping, the
// files and the page), report_tables.cpp (results.csv, summary.csv and the Markdown
// table), report_plots.cpp and report_verdict.cpp (and compare.cpp). Not part of the sweep API.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sweep/report.h"
#include "sweep/stats.h"

namespace biaslab::sweep::detail {

/// Keys of the data-size axis (drawn against the number of training images).
bool is_size_key(const std::string& key);

/// The value `run` has for a swept key ("" when the key is not swept).
std::string value_of(const PlannedRun& run, const std::string& key);

/// A CSV field, quoted when it holds a comma, quote or line break.
std::string csv_cell(const std::string& s);

/// A fraction as a percentage with two decimals ("n/a" when not finite).
std::string pct(double v);

/// A difference of fractions in signed points with two decimals ("+1.25").
std::string signed_pct(double v);

/// The CSV cells mean,sd,ci95_low,ci95_high of `s` (fractions, 6 significant digits;
/// empty where n is too small: the mean needs 1 value, the others 2).
std::string stats_csv(const Stats& s);

/// "mean ± sd" in percent ("n/a" without values, the mean alone with one); the mean
/// signed (signed_pct) when `difference`.
std::string mean_sd_text(const Stats& s, bool difference);

/// "[low, high]", the 95% interval in percent ("" with fewer than 2 values); signed when
/// `difference`.
std::string ci_text(const Stats& s, bool difference);

/// The sweep's axes that are not seeds / that are, in axis order.
std::vector<std::string> non_seed_axes(const Plan& plan);
std::vector<std::string> seed_axes(const Plan& plan);

/// "preset=vit_lite_p4, norm=none" (or the bare value for one key).
std::string label(const std::vector<std::string>& keys, const std::vector<std::string>& values);

/// "final.test_acc" -> "final test accuracy"
std::string metric_name(const std::string& metric);

/// Indices of `keys` within `all`.
std::vector<size_t> positions(const std::vector<std::string>& all, const std::vector<std::string>& keys);

/// The values at `at`.
std::vector<std::string> pick(const std::vector<std::string>& values, const std::vector<size_t>& at);

/// The series keys: group keys except x, with report.series first.
std::vector<std::string> series_keys(const Plan& plan, const Grouping& g);

/// Distinct values of the group keys at `at`, in first-appearance order.
std::vector<std::vector<std::string>> distinct(const Grouping& g, const std::vector<size_t>& at);

/// The group whose values at `at_a` are `a` and at `at_b` are `b`, or nullptr.
const Group* find_group(const Grouping& g, const std::vector<size_t>& at_a, const std::vector<std::string>& a,
                        const std::vector<size_t>& at_b, const std::vector<std::string>& b);

struct PairedTables;

/// A tuned sweep's tuning, from SWEEP_DIR/tune/tune.json (sweep/tuner.h).
struct TuningRecord {
  bool tuned = false;                        ///< the plan has a tune section
  std::map<std::string, std::string> chosen; ///< cell -> "optim.lr=0.05, ..." (decided cells)
  std::string markdown;                      ///< the report's Tuning section
  std::string csv;                           ///< tuning.csv: one row per tuning run
  std::string edge_check;                    ///< decided cells whose choice is at the end of an ordered grid ("" if none)
};
TuningRecord read_tuning(const Layout& layout, const Plan& plan);

/// results.csv: one row per planned run (`tuned`: the values its cell chose).
std::string results_csv(const Plan& plan, const std::vector<RunResult>& results, const TuningRecord& tuning);

/// The held-out accuracy a run's training accuracy is compared with: final validation
/// accuracy when it has a split, else final test accuracy.
double held_out_acc(const RunResult& r);

/// A run's regime (sweep/regime.h) from its own curve; "" when it cannot tell. write_report
/// stores it in RunResult::regime for the tables and checks.
std::string run_regime(const RunResult& r, const RegimeRule& rule);

/// Where the sweep varies the budget (a non-seed axis train.epochs or train.steps): per
/// configuration of the other keys, the paired change of the metric (same seeds) from
/// each budget to the next larger one.
struct BudgetStep {
  std::vector<std::string> context;  ///< values of the other non-seed keys (Grouping keys order, budget left out)
  std::string from, to;              ///< budget values
  Stats change;                      ///< per-seed metric at `to` minus at `from`
  bool converged = false;            ///< change.mean <= delta (n >= 1)
};
struct BudgetComparison {
  std::string key;  ///< "" when the sweep does not vary the budget
  double delta = 0.0;
  std::vector<BudgetStep> steps;
  /// The step from group `grp`'s budget to the next larger one (nullptr at the largest).
  const BudgetStep* step_of(const Grouping& g, const Group& grp) const;
};
BudgetComparison budget_comparison(const Plan& plan, const Grouping& g, const std::vector<RunResult>& results);

/// budget.csv and the report's Budget section (both "" without a budget axis).
PairedTables budget_tables(const Plan& plan, const Grouping& g, const BudgetComparison& b);

/// A configuration's regime: from the means of its complete runs' clean training
/// accuracy, held-out accuracy and training-accuracy rise, refined by its budget step.
struct GroupRegime {
  double train_acc = 0.0, held_out = 0.0, rise = 0.0;  ///< means (NaN without values)
  std::string regime;                                   ///< sweep/regime.h; "" when it cannot tell
  std::string converged;                                ///< "yes" / "no" with a budget step, else ""
};
std::vector<GroupRegime> group_regimes(const Grouping& g, const BudgetComparison& b, const RegimeRule& rule);

/// One row per configuration: summary.csv and the Markdown table of summary.md.
struct SummaryTables {
  std::string csv;
  std::string markdown;
};
SummaryTables summary_tables(const Plan& plan, const Grouping& g, const TuningRecord& tuning,
                             const std::vector<GroupRegime>& regimes, const BudgetComparison& budget);

/// The report's warnings (runs with another config than planned) and the regimes of its
/// runs and configurations, with the rule that gave them.
std::string checks_markdown(const std::vector<RunResult>& results, const std::vector<GroupRegime>& regimes,
                            const BudgetComparison& budget, const RegimeRule& rule);

/// The metric of every complete run that kept its planned config, by configuration of
/// the group keys other than the series key (the context) and by replicate (its seed
/// values): what paired comparisons between series values are made of.
struct PairedData {
  std::string series;                                ///< "" when there is no single series key
  std::vector<std::string> values;                   ///< its values, in plan order
  std::vector<std::string> context_keys;
  std::vector<std::vector<std::string>> contexts;    ///< in plan order
  using ByValue = std::map<std::string, double>;
  std::map<std::vector<std::string>, std::map<std::vector<std::string>, ByValue>> table;  ///< context -> replicate -> value
};
PairedData paired_data(const Plan& plan, const Grouping& g, const std::vector<RunResult>& results);

/// Per-seed paired differences between the values of the series key within each
/// configuration of the other keys: paired.csv (every pair) and a Markdown table
/// (every value against the first). Empty when there is no single series key.
struct PairedTables {
  std::string csv;
  std::string markdown;
};
PairedTables paired_differences(const Plan& plan, const PairedData& data);

/// report.gap: per context, the share of the paired gap target - baseline that each
/// other series value closes, (value - baseline) / (target - baseline) over the
/// replicates that have all three: gap.csv and a Markdown table. Empty when not asked for.
PairedTables gap_shares(const Plan& plan, const PairedData& data);

/// With a data-size x axis and two series values to pair (report.gap's target minus its
/// baseline, else the only two values): per configuration of the other keys, the change
/// of the per-seed paired difference per decade of training images (points), from a
/// least-squares line on log10(images) with its 95% interval, as Markdown bullets; "" when
/// it does not apply.
std::string gap_slope(const Plan& plan, const Grouping& g, const PairedData& data, const std::vector<RunResult>& results);

/// Draws the report's plots into `dir`; their file names, in the order drawn.
std::vector<std::string> draw_plots(const Plan& plan, const Grouping& g, const std::filesystem::path& dir);

}  // namespace biaslab::sweep::detail
