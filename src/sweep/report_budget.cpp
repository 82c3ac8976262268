// The budget comparison of `biaslab report`: where a sweep varies the training budget
// (train.epochs or train.steps as an axis), the paired change of the metric from each
// budget to the next larger one, per configuration of the other keys, over the seeds
// both budgets ran. A budget is called converged only when that change is at most
// report.converged_delta: the rule behind every "converged" the report writes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sweep/report_internal.h"
#include "sweep/values.h"

namespace biaslab::sweep::detail {
namespace {

// The budget axis: the first non-seed axis that is train.epochs or train.steps with
// numeric values ("" when there is none).
std::string budget_key(const Plan& plan, const Grouping& g) {
  for (const auto& k : g.keys) {
    if (k != "train.epochs" && k != "train.steps") continue;
    bool numeric = true;
    for (const auto& r : plan.runs) numeric = numeric && parse_number(value_of(r, k));
    if (numeric) return k;
  }
  return "";
}

}  // namespace

const BudgetStep* BudgetComparison::step_of(const Grouping& g, const Group& grp) const {
  if (key.empty()) return nullptr;
  const size_t at = size_t(std::find(g.keys.begin(), g.keys.end(), key) - g.keys.begin());
  std::vector<std::string> context;
  for (size_t i = 0; i < g.keys.size(); ++i)
    if (i != at) context.push_back(grp.values[i]);
  for (const auto& s : steps)
    if (s.context == context && same_value(s.from, grp.values[at])) return &s;
  return nullptr;
}

BudgetComparison budget_comparison(const Plan& plan, const Grouping& g, const std::vector<RunResult>& results) {
  BudgetComparison b;
  b.key = budget_key(plan, g);
  b.delta = plan.report.converged_delta;
  if (b.key.empty()) return b;
  const std::vector<std::string> seeds = seed_axes(plan);
  // context -> replicate -> budget -> metric, and the budgets in increasing order.
  std::map<std::vector<std::string>, std::map<std::vector<std::string>, std::map<std::string, double>>> table;
  std::vector<std::vector<std::string>> contexts;
  std::vector<std::pair<double, std::string>> budgets;
  for (const auto& r : results) {
    std::vector<std::string> context, replicate;
    for (const auto& k : g.keys)
      if (k != b.key) context.push_back(value_of(*r.run, k));
    for (const auto& k : seeds) replicate.push_back(value_of(*r.run, k));
    if (std::find(contexts.begin(), contexts.end(), context) == contexts.end()) contexts.push_back(context);
    const std::string budget = value_of(*r.run, b.key);
    double x = 0.0;
    parse_number(budget, &x);
    if (std::find_if(budgets.begin(), budgets.end(), [&](const auto& p) { return p.second == budget; }) == budgets.end())
      budgets.emplace_back(x, budget);
    if (r.complete && r.drift.empty() && std::isfinite(r.metric)) table[context][replicate][budget] = r.metric;
  }
  std::stable_sort(budgets.begin(), budgets.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
  for (const auto& context : contexts)
    for (size_t i = 0; i + 1 < budgets.size(); ++i) {
      BudgetStep s;
      s.context = context;
      s.from = budgets[i].second;
      s.to = budgets[i + 1].second;
      std::vector<double> diffs;
      for (const auto& [replicate, by_budget] : table[context]) {
        const auto a = by_budget.find(s.from), c = by_budget.find(s.to);
        if (a != by_budget.end() && c != by_budget.end()) diffs.push_back(c->second - a->second);
      }
      s.change = describe(diffs);
      s.converged = s.change.n > 0 && s.change.mean <= b.delta;
      b.steps.push_back(s);
    }
  return b;
}

PairedTables budget_tables(const Plan& plan, const Grouping& g, const BudgetComparison& b) {
  PairedTables out;
  if (b.key.empty()) return out;
  std::vector<std::string> context_keys;
  for (const auto& k : g.keys)
    if (k != b.key) context_keys.push_back(k);
  for (const auto& k : context_keys) out.csv += csv_cell(k) + ",";
  out.csv += "budget_key,from,to,n_pairs,change_mean,change_sd,change_ci95_low,change_ci95_high,converged\n";
  std::string table = "| ";
  for (const auto& k : context_keys) table += last_component(k) + " | ";
  table += last_component(b.key) + " | next | paired change (points) mean ± sd | 95% CI | pairs | converged |\n|";
  for (size_t i = 0; i < context_keys.size() + 6; ++i) table += "---|";
  table += "\n";
  int measured = 0, converged = 0;
  for (const auto& s : b.steps) {
    for (const auto& v : s.context) out.csv += csv_cell(v) + ",";
    const std::string verdict = s.change.n ? (s.converged ? "yes" : "no") : "";
    out.csv += fmt::format("{},{},{},{},{},{}\n", b.key, csv_cell(s.from), csv_cell(s.to), s.change.n,
                           stats_csv(s.change), verdict);
    table += "| ";
    for (const auto& v : s.context) table += v + " | ";
    table += fmt::format("{} | {} | {} | {} | {} | {} |\n", s.from, s.to, mean_sd_text(s.change, true),
                         ci_text(s.change, true), s.change.n, verdict.empty() ? "n/a" : verdict);
    measured += s.change.n > 0;
    converged += s.converged;
  }
  out.markdown = fmt::format(
      "Per seed, {} at the next larger {} minus at this one. A budget is **converged** when that paired change is at "
      "most {:.3g} points (report.converged_delta); the interval says how sure the seeds make it. {} of {} budget "
      "steps measured are converged. All steps: budget.csv.\n\n",
      metric_name(plan.report.metric), b.key, 100 * b.delta, converged, measured);
  out.markdown += table;
  return out;
}

}  // namespace biaslab::sweep::detail
