// The report's checks on its own runs: runs whose config is not the planned one
// (RunResult::drift; left out of the statistics) and what limits each run and
// configuration (its regime, sweep/regime.h), so that a table of runs that were still
// fitting does not pass for the answer at convergence.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "sweep/report_internal.h"

namespace biaslab::sweep::detail {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double train_rise(const RunResult& r, const RegimeRule& rule) {
  std::vector<std::pair<int64_t, double>> curve;
  for (const auto& p : r.curve)
    if (std::isfinite(p.train_eval_acc)) curve.emplace_back(p.step, p.train_eval_acc);
  return tail_rise(curve, r.steps, rule.tail);
}

double mean_of(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / double(v.size());
}

// "fits 3, underfits 1, plateau 2, cannot tell 1"
std::string counts_text(const std::vector<std::string>& regimes) {
  std::map<std::string, int> count;
  for (const auto& r : regimes) ++count[r];
  std::string out;
  for (const std::string name : {"fits", "underfits", "plateau", ""}) {
    if (!count[name]) continue;
    out += (out.empty() ? "" : ", ") + (name.empty() ? std::string("cannot tell") : name) + " " + std::to_string(count[name]);
  }
  return out;
}

}  // namespace

double held_out_acc(const RunResult& r) { return std::isfinite(r.final_val_acc) ? r.final_val_acc : r.final_test_acc; }

std::string run_regime(const RunResult& r, const RegimeRule& rule) {
  if (!r.complete) return "";
  return regime_of(r.final_train_eval_acc, held_out_acc(r), train_rise(r, rule), rule);
}

std::vector<GroupRegime> group_regimes(const Grouping& g, const BudgetComparison& b, const RegimeRule& rule) {
  std::vector<GroupRegime> out;
  for (const auto& grp : g.groups) {
    std::vector<double> train, held, rise;
    for (const RunResult* r : grp.runs) {
      if (!r->complete || !r->drift.empty() || !std::isfinite(r->final_train_eval_acc)) continue;
      train.push_back(r->final_train_eval_acc);
      held.push_back(held_out_acc(*r));
      const double x = train_rise(*r, rule);
      if (std::isfinite(x)) rise.push_back(x);
    }
    GroupRegime gr;
    gr.train_acc = mean_of(train);
    gr.held_out = mean_of(held);
    gr.rise = rise.size() == train.size() ? mean_of(rise) : kNaN;
    gr.regime = regime_of(gr.train_acc, gr.held_out, gr.rise, rule);
    const BudgetStep* step = b.step_of(g, grp);
    if (step && step->change.n > 0) {  // a next budget with runs to pair
      gr.converged = step->converged ? "yes" : "no";
      gr.regime = regime_with_budget(gr.regime, gr.train_acc, gr.held_out, step->change.mean, b.delta, rule);
    }
    out.push_back(gr);
  }
  return out;
}

std::string checks_markdown(const std::vector<RunResult>& results, const std::vector<GroupRegime>& regimes,
                            const BudgetComparison& budget, const RegimeRule& rule) {
  std::string md;
  std::vector<std::string> drifted;
  for (const auto& r : results)
    if (!r.drift.empty()) drifted.push_back("- `" + r.run->name + "`: " + r.drift);
  if (!drifted.empty()) {
    md += fmt::format("**Warning: {} run(s) ran with a config other than the sweep's planned one** (made by hand or "
                      "with other --set values) and are left out of the statistics; remove their run directories "
                      "and rerun the sweep to redo them:\n\n",
                      drifted.size());
    for (const auto& d : drifted) md += d + "\n";
    md += "\n";
  }
  std::vector<std::string> per_run, per_group;
  int complete = 0;
  for (const auto& r : results) {
    if (!r.complete) continue;
    ++complete;
    per_run.push_back(r.regime);
  }
  for (const auto& gr : regimes) per_group.push_back(gr.regime);
  md += fmt::format(
      "Regimes (docs/sweeps.md, \"Regimes and convergence\"): a run **fits** its training data when its clean training "
      "accuracy (eval mode, no augmentation) is at least {:.4g}% or more than {:.3g} points above its held-out accuracy "
      "(validation when it has a split, else test): more data is the lever. Otherwise it **underfits** when that "
      "training accuracy still rose by more than {:.3g} points over its last {:.0f}% of steps (more steps are the "
      "lever), else it is on a **plateau**.",
      100 * rule.fit_level, 100 * rule.fit_gap, 100 * rule.min_gain, 100 * rule.tail);
  if (!budget.key.empty())
    md += fmt::format(" Where the next larger {} is measured, its paired change decides instead: above {:.3g} points "
                      "underfits, else plateau; and only a budget whose next one adds at most that is called converged.",
                      budget.key, 100 * budget.delta);
  md += "\n\n";
  if (complete == 0) return md + "No run has finished.\n";
  md += fmt::format("Runs: {} (results.csv: regime). Configurations: {} (summary.csv: regime).\n", counts_text(per_run),
                    counts_text(per_group));
  if (std::all_of(per_run.begin(), per_run.end(), [](const std::string& s) { return s.empty(); }))
    md += "\nNo run measured its clean training accuracy (train.train_eval_size 0, or runs made before it existed): "
          "the report cannot tell a run that fits its data from one that was still fitting.\n";
  return md;
}

}  // namespace biaslab::sweep::detail
