// Paired differences for `biaslab report`: runs of two series values (e.g. two model
// presets) that share everything else, seeds included, differ only in the series
// value, so their per-seed difference removes the seed-to-seed (and subset-to-subset)
// variation that overlapping per-series intervals still contain.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sweep/report_internal.h"

namespace biaslab::sweep::detail {

PairedData paired_data(const Plan& plan, const Grouping& g, const std::vector<RunResult>& results) {
  PairedData d;
  d.series = plan.report.series;
  if (d.series.empty()) {
    std::vector<std::string> others;
    for (const auto& k : g.keys)
      if (k != g.x) others.push_back(k);
    if (others.size() == 1) d.series = others.front();
  }
  if (d.series.empty()) return d;
  for (const auto& r : results) {
    const std::string v = value_of(*r.run, d.series);
    if (std::find(d.values.begin(), d.values.end(), v) == d.values.end()) d.values.push_back(v);
  }
  for (const auto& k : g.keys)
    if (k != d.series) d.context_keys.push_back(k);
  const std::vector<std::string> replicate_keys = seed_axes(plan);
  for (const auto& r : results) {
    std::vector<std::string> context, replicate;
    for (const auto& k : d.context_keys) context.push_back(value_of(*r.run, k));
    for (const auto& k : replicate_keys) replicate.push_back(value_of(*r.run, k));
    if (std::find(d.contexts.begin(), d.contexts.end(), context) == d.contexts.end()) d.contexts.push_back(context);
    if (r.complete && r.drift.empty() && std::isfinite(r.metric))
      d.table[context][replicate][value_of(*r.run, d.series)] = r.metric;
  }
  return d;
}

PairedTables paired_differences(const Plan& plan, const PairedData& d) {
  PairedTables out;
  if (d.series.empty() || d.values.size() < 2) return out;
  const auto& values = d.values;  // the first is the reference of the Markdown table
  for (const auto& k : d.context_keys) out.csv += csv_cell(k) + ",";
  out.csv += "series,reference,n_pairs,diff_mean,diff_sd,diff_ci95_low,diff_ci95_high\n";
  out.markdown = "| ";
  for (const auto& k : d.context_keys) out.markdown += last_component(k) + " | ";
  out.markdown += last_component(d.series) + " | vs " + values.front() +
                  ": paired difference (points) mean ± sd | 95% CI | pairs |\n|";
  for (size_t i = 0; i < d.context_keys.size() + 4; ++i) out.markdown += "---|";
  out.markdown += "\n";
  for (const auto& context : d.contexts) {
    const auto rows = d.table.find(context);
    for (size_t a = 0; a < values.size(); ++a)
      for (size_t b = a + 1; b < values.size(); ++b) {
        std::vector<double> diffs;
        if (rows != d.table.end())
          for (const auto& [replicate, by_value] : rows->second) {
            const auto ia = by_value.find(values[a]), ib = by_value.find(values[b]);
            if (ia != by_value.end() && ib != by_value.end()) diffs.push_back(ib->second - ia->second);
          }
        const Stats s = describe(diffs);
        for (const auto& v : context) out.csv += csv_cell(v) + ",";
        out.csv += fmt::format("{},{},{},{}\n", csv_cell(values[b]), csv_cell(values[a]), s.n, stats_csv(s));
        if (a != 0) continue;
        out.markdown += "| ";
        for (const auto& v : context) out.markdown += v + " | ";
        out.markdown += fmt::format("{} | {} | {} | {} |\n", values[b], mean_sd_text(s, true), ci_text(s, true), s.n);
      }
  }
  out.markdown = "Per seed (the same seeds and subset draws), " + metric_name(plan.report.metric) + " of each " +
                 last_component(d.series) + " minus " + values.front() + "'s; an interval that excludes 0 is a " +
                 "difference the seeds agree on. All pairs: paired.csv.\n\n" + out.markdown;
  return out;
}

}  // namespace biaslab::sweep::detail
