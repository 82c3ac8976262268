// report.gap for `biaslab report`: how much of the gap between two series values (a
// baseline, e.g. a ViT with global attention, and a target, e.g. the CNN) each other
// value closes, from per-seed paired differences (sweep/report_paired.cpp): the
// share (value - baseline) / (target - baseline) of the means over the seeds that have
// all three runs, beside both differences with their 95% intervals.
#include <fmt/format.h>

#include <cmath>

#include "sweep/report_internal.h"

namespace biaslab::sweep::detail {

PairedTables gap_shares(const Plan& plan, const PairedData& d) {
  PairedTables out;
  const std::string& baseline = plan.report.gap_baseline;
  const std::string& target = plan.report.gap_target;
  if (target.empty() || d.series != plan.report.series) return out;
  const auto num = [](double v) { return fmt::format("{:.6g}", v); };
  const auto with_ci = [&](const Stats& s) {
    if (s.n == 0) return std::string("n/a");
    return signed_pct(s.mean) + (s.n > 1 ? " " + ci_text(s, true) : "");
  };
  for (const auto& k : d.context_keys) out.csv += csv_cell(k) + ",";
  out.csv +=
      "series,baseline,target,n,closed_mean,closed_ci95_low,closed_ci95_high,gap_mean,gap_ci95_low,gap_ci95_high,share\n";
  std::string rows;
  for (const auto& context : d.contexts) {
    const auto by_replicate = d.table.find(context);
    for (const auto& value : d.values) {
      if (value == baseline || value == target) continue;
      std::vector<double> closed, gap;
      if (by_replicate != d.table.end())
        for (const auto& [replicate, by_value] : by_replicate->second) {
          const auto b = by_value.find(baseline), t = by_value.find(target), v = by_value.find(value);
          if (b == by_value.end() || t == by_value.end() || v == by_value.end()) continue;
          closed.push_back(v->second - b->second);
          gap.push_back(t->second - b->second);
        }
      const Stats c = describe(closed), g = describe(gap);
      const bool defined = g.n > 0 && std::fabs(g.mean) > 1e-12;
      const double share = defined ? c.mean / g.mean : 0.0;
      for (const auto& v : context) out.csv += csv_cell(v) + ",";
      const auto low = [&](const Stats& s) { return s.n > 1 ? num(s.mean - s.ci95_half) : ""; };
      const auto high = [&](const Stats& s) { return s.n > 1 ? num(s.mean + s.ci95_half) : ""; };
      out.csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(value), csv_cell(baseline), csv_cell(target),
                             c.n, c.n ? num(c.mean) : "", low(c), high(c), g.n ? num(g.mean) : "", low(g), high(g),
                             defined ? num(share) : "");
      rows += "| ";
      for (const auto& v : context) rows += v + " | ";
      rows += fmt::format("{} | {} | {} | {} | {} |\n", value, defined ? fmt::format("{:.0f}%", 100 * share) : "n/a",
                          with_ci(c), with_ci(g), c.n);
    }
  }
  if (rows.empty()) return PairedTables{};
  std::string head = "| ";
  for (const auto& k : d.context_keys) head += last_component(k) + " | ";
  head += last_component(d.series) + " | closes | value − " + baseline + " (points) [95% CI] | " + target + " − " + baseline +
          " [95% CI] | seeds |\n|";
  for (size_t i = 0; i < d.context_keys.size() + 5; ++i) head += "---|";
  out.markdown = "The share of the gap between " + baseline + " and " + target + " (" + metric_name(plan.report.metric) +
                 ") that each other " + last_component(d.series) + " closes: (value − " + baseline + ") / (" + target +
                 " − " + baseline + "), means of per-seed paired differences over the seeds that have all three runs. " +
                 "100% = as good as " + target + ", 0% = no better than " + baseline +
                 ". A ratio of means: its uncertainty is in the two intervals beside it. All rows: gap.csv.\n\n" + head +
                 "\n" + rows;
  return out;
}

}  // namespace biaslab::sweep::detail
