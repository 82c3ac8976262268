// The report's checks on its own runs: runs whose config is not the planned one
// (RunResult::drift; left out of the statistics) and runs still improving at their end
// by a stated criterion, so that a table of unconverged runs does not pass as a result.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sweep/report_internal.h"

namespace biaslab::sweep::detail {

std::string still_improving(const RunResult& r, const ConvergenceRule& rule) {
  if (!r.complete || r.curve.size() < 2 || r.steps <= 0) return "";
  const bool val = std::all_of(r.curve.begin(), r.curve.end(), [](const CurvePoint& p) { return std::isfinite(p.val_acc); });
  const double tail_start = double(r.steps) * (1.0 - rule.tail);
  double before = -1.0, after = -1.0;
  for (const auto& p : r.curve) {
    const double acc = val ? p.val_acc : p.test_acc;
    (double(p.step) <= tail_start ? before : after) = std::max(double(p.step) <= tail_start ? before : after, acc);
  }
  if (before < 0 || after < 0) return "";  // no evaluation before (or inside) the tail: cannot tell
  return after - before > rule.min_gain ? "yes" : "no";
}

std::string checks_markdown(const std::vector<RunResult>& results, const ConvergenceRule& rule) {
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
  int judged = 0;
  std::vector<std::string> improving;
  for (const auto& r : results) {
    const std::string s = still_improving(r, rule);
    if (s.empty()) continue;
    ++judged;
    if (s == "yes") improving.push_back("`" + r.run->name + "`");
  }
  md += fmt::format("Convergence: a run counts as still improving when its best accuracy (validation when the run "
                    "has a split, else test) in the last {:.0f}% of its steps beats its best before them by more than "
                    "{:.2g} points. ",
                    100 * rule.tail, 100 * rule.min_gain);
  if (judged == 0) {
    md += "No run has evaluations both before and inside that window.\n";
  } else if (improving.empty()) {
    md += fmt::format("None of the {} runs judged was.\n", judged);
  } else {
    md += fmt::format("**{} of {} runs judged were still improving** (their results understate what the model "
                      "reaches with a longer budget): ",
                      improving.size(), judged);
    const size_t shown = std::min<size_t>(improving.size(), 20);
    for (size_t i = 0; i < shown; ++i) md += (i ? ", " : "") + improving[i];
    if (shown < improving.size()) md += fmt::format(" and {} more (results.csv: still_improving)", improving.size() - shown);
    md += ".\n";
  }
  return md;
}

}  // namespace biaslab::sweep::detail
