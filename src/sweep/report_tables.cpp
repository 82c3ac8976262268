// results.csv, summary.csv and the Markdown table of `biaslab report`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sweep/report_internal.h"

namespace biaslab::sweep::detail {

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {

std::string num(double v, const char* format = "{:.6g}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : "";
}

// CSV headers spell a summary.json path with underscores: final.test_acc -> final_test_acc.
std::string column_stem(std::string metric) {
  for (char& c : metric)
    if (c == '.') c = '_';
  return metric;
}

// The metrics every results.csv row has; the report metric gets a column of its own only
// when it is none of them.
const std::vector<std::string> kFixedMetricColumns = {"final_test_acc", "final_test_loss", "final_test_top5_acc",
                                                      "best_test_acc", "best_val_acc"};

// The derived columns after the swept keys, each renamed run_NAME where a swept key (a
// variant axis, say) already has its name: no two columns of a CSV share a name, which a
// reader keyed by name would silently merge.
std::string derived_columns(const std::vector<std::string>& keys, const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names)
    out += "," + (std::find(keys.begin(), keys.end(), name) != keys.end() ? "run_" + name : name);
  return out;
}

}  // namespace

std::string results_csv(const Plan& plan, const std::vector<RunResult>& results, const TuningRecord& tuning) {
  std::string csv = "run";
  for (const auto& k : plan.keys) csv += "," + csv_cell(k);
  const std::string metric = column_stem(plan.report.metric);
  const bool metric_column =
      std::find(kFixedMetricColumns.begin(), kFixedMetricColumns.end(), metric) == kFixedMetricColumns.end();
  std::vector<std::string> derived = {"state", "family", "preset", "parameters", "flops_per_image", "train_size",
                                      "images_seen", "steps", "epochs"};
  if (metric_column) derived.push_back(metric);
  for (const std::string name : {"final_test_acc", "final_test_loss", "final_test_top5_acc", "best_epoch",
                                 "best_test_acc", "best_val_acc", "train_time_s", "process_wall_time_s", "reason",
                                 "final_train_eval_acc", "regime", "config_drift"})
    derived.push_back(name);
  if (tuning.tuned) derived.push_back("tuned");
  csv += derived_columns(plan.keys, derived) + "\n";
  for (const auto& r : results) {
    csv += csv_cell(r.run->name);
    for (const auto& k : plan.keys) {
      csv += ',';
      csv += csv_cell(value_of(*r.run, k));
    }
    csv += fmt::format(",{},{},{},{},{},{},{},{},{},{}{},{},{},{},{},{},{},{},{}\n", r.state, r.family, r.preset,
                       r.complete ? std::to_string(r.parameters) : "", r.complete ? std::to_string(r.flops_per_image) : "",
                       r.complete ? std::to_string(r.train_size) : "", r.complete ? std::to_string(r.images_seen) : "",
                       r.complete ? std::to_string(r.steps) : "", r.complete ? std::to_string(r.epochs) : "",
                       metric_column ? num(r.metric) + "," : std::string(), num(r.final_test_acc), num(r.final_test_loss), num(r.final_test_top5_acc),
                       r.complete ? std::to_string(r.best_epoch) : "", num(r.best_test_acc), num(r.best_val_acc),
                       num(r.train_time_s, "{:.1f}"), num(r.wall_time_s, "{:.1f}"), csv_cell(r.reason));
    csv.pop_back();
    csv += "," + num(r.final_train_eval_acc) + "," + r.regime + "," + csv_cell(r.drift);
    if (tuning.tuned) {
      const auto it = tuning.chosen.find(r.run->cell);
      csv += "," + csv_cell(it == tuning.chosen.end() ? "" : it->second);
    }
    csv += "\n";
  }
  return csv;
}

SummaryTables summary_tables(const Plan& plan, const Grouping& g, const TuningRecord& tuning,
                             const std::vector<GroupRegime>& regimes, const BudgetComparison& budget) {
  // A group's runs share one cell: the cells are defined by some of the group keys.
  auto tuned = [&](const Group& grp) {
    const auto it = grp.runs.empty() ? tuning.chosen.end() : tuning.chosen.find(grp.runs.front()->run->cell);
    return it == tuning.chosen.end() ? std::string("not yet tuned") : it->second;
  };
  const std::string m = column_stem(plan.report.metric);
  std::string scsv;
  for (const auto& k : g.keys) scsv += csv_cell(k) + ",";
  std::vector<std::string> derived = {"family", "train_size", "n", "planned", m + "_mean", m + "_sd", m + "_ci95_low",
                                      m + "_ci95_high", "train_eval_acc_mean", "regime"};
  if (!budget.key.empty()) derived.push_back("converged");
  if (tuning.tuned) derived.push_back("tuned");
  // The Markdown table shows the regime where some run measured its training accuracy.
  const bool regime_column = std::any_of(regimes.begin(), regimes.end(), [](const GroupRegime& r) {
    return std::isfinite(r.train_acc);
  });
  scsv += derived_columns(g.keys, derived).substr(1) + "\n";
  std::string md = "| ";
  for (const auto& k : g.keys) md += last_component(k) + " | ";
  md += "family | train images | n | " + metric_name(plan.report.metric) + " (%) mean ± sd | 95% CI | params | MFLOPs/img |" +
        (regime_column ? " train acc (%) | regime |" : "") + (budget.key.empty() ? "" : " converged |") +
        (tuning.tuned ? " tuned values |" : "") + "\n|";
  for (size_t i = 0; i < g.keys.size() + 7 + (regime_column ? 2 : 0) + (budget.key.empty() ? 0 : 1) + (tuning.tuned ? 1 : 0); ++i)
    md += "---|";
  md += "\n";
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const Group& grp = g.groups[gi];
    const GroupRegime& regime = regimes[gi];
    const Stats& s = grp.stats;
    for (const auto& v : grp.values) scsv += csv_cell(v) + ",";
    const std::string size = s.n ? num(grp.train_size, "{:.0f}") : "";
    int failed = 0;
    for (const RunResult* r : grp.runs) failed += r->state == "failed";
    scsv += fmt::format("{},{},{},{},{},{},{}{}{}\n", grp.family, size, s.n, grp.runs.size(), stats_csv(s),
                        num(regime.train_acc), regime.regime, budget.key.empty() ? "" : "," + regime.converged,
                        tuning.tuned ? "," + csv_cell(tuned(grp)) : "");
    const RunResult* any = nullptr;
    for (const RunResult* r : grp.runs)
      if (r->complete) any = r;
    md += "| ";
    for (const auto& v : grp.values) md += v + " | ";
    md += fmt::format("{} | {} | {}/{}{} | {} | {} | {} | {} |{}{}{}\n", grp.family, size, s.n, grp.runs.size(),
                      failed ? fmt::format(" ({} failed)", failed) : "", mean_sd_text(s, false), ci_text(s, false),
                      any ? fmt::format("{:.3f} M", any->parameters / 1e6) : "",
                      any ? fmt::format("{:.1f}", any->flops_per_image / 1e6) : "",
                      regime_column ? " " + (std::isfinite(regime.train_acc) ? pct(regime.train_acc) : std::string()) + " | " +
                                          regime.regime + " |"
                                    : "",
                      budget.key.empty() ? "" : " " + regime.converged + " |", tuning.tuned ? " " + tuned(grp) + " |" : "");
  }
  return {scsv, md};
}

}  // namespace biaslab::sweep::detail
