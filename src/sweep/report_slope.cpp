// The gap's slope with data for `biaslab report`: how the paired difference between two
// series values (e.g. ResNet-20 minus the ViT) changes per decade of training images, with
// a 95% interval: the size x family interaction, which per-size intervals do not give.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sweep/report_internal.h"

namespace biaslab::sweep::detail {
namespace {

// The pair whose difference is fitted: report.gap's target minus its baseline, else the
// series' second value minus its first (as paired.csv's first row); empty when neither.
std::pair<std::string, std::string> fitted_pair(const Plan& plan, const PairedData& d) {
  if (!plan.report.gap_target.empty()) return {plan.report.gap_baseline, plan.report.gap_target};
  if (d.values.size() == 2) return {d.values[0], d.values[1]};
  return {};
}

}  // namespace

std::string gap_slope(const Plan& plan, const Grouping& g, const PairedData& d, const std::vector<RunResult>& results) {
  if (g.x.empty() || !is_size_key(g.x) || d.series.empty()) return "";
  const auto [baseline, target] = fitted_pair(plan, d);
  if (target.empty()) return "";
  const size_t x_col = size_t(std::find(d.context_keys.begin(), d.context_keys.end(), g.x) - d.context_keys.begin());
  if (x_col == d.context_keys.size()) return "";
  // Training images of each context (both members of a pair draw the same subset): the
  // mean over its complete runs, as summary.json's data.train_size says.
  std::map<std::vector<std::string>, std::pair<double, int>> size_sum;
  for (const auto& r : results) {
    if (!r.complete || !r.drift.empty() || r.train_size <= 0) continue;
    std::vector<std::string> context;
    for (const auto& k : d.context_keys) context.push_back(value_of(*r.run, k));
    auto& [sum, n] = size_sum[context];
    sum += double(r.train_size);
    ++n;
  }
  // One line per configuration of the keys other than x and the series.
  struct Points {
    std::vector<double> log_size, diff;
    double smallest = 0, largest = 0;
  };
  std::map<std::vector<std::string>, Points> lines;
  std::vector<std::vector<std::string>> order;
  for (const auto& context : d.contexts) {
    std::vector<std::string> rest = context;
    rest.erase(rest.begin() + long(x_col));
    const auto rows = d.table.find(context);
    const auto size = size_sum.find(context);
    if (rows == d.table.end() || size == size_sum.end()) continue;
    const double images = size->second.first / size->second.second;
    if (!lines.count(rest)) order.push_back(rest);
    Points& p = lines[rest];
    for (const auto& [replicate, by_value] : rows->second) {
      const auto ib = by_value.find(baseline), it = by_value.find(target);
      if (ib == by_value.end() || it == by_value.end()) continue;
      p.log_size.push_back(std::log10(images));
      p.diff.push_back(100 * (it->second - ib->second));
      p.smallest = p.smallest == 0 ? images : std::min(p.smallest, images);
      p.largest = std::max(p.largest, images);
    }
  }
  std::string out;
  for (const auto& rest : order) {
    const Points& p = lines.at(rest);
    const Slope s = fit_slope(p.log_size, p.diff);
    std::vector<std::string> rest_keys = d.context_keys;
    rest_keys.erase(rest_keys.begin() + long(x_col));
    const std::string where = rest.empty() ? "" : " (" + label(rest_keys, rest) + ")";
    if (s.n == 0) {
      out += fmt::format("- {} minus {} per decade of training images{}: not enough paired runs at two or more sizes "
                         "for a line ({} pair(s)).\n",
                         target, baseline, where, p.diff.size());
      continue;
    }
    const double lo = s.slope - s.ci95_half, hi = s.slope + s.ci95_half;
    const std::string reading = lo > 0   ? "the gap grows with data (the interval excludes 0)"
                                : hi < 0 ? "the gap shrinks with data (the interval excludes 0)"
                                         : "no change of the gap with data is resolved (the interval contains 0)";
    out += fmt::format("- {} minus {} per decade of training images{}: {:+.2f} points [{:+.2f}, {:+.2f}] (least "
                       "squares of {} per-seed paired differences on log10 of {:.0f} to {:.0f} images); {}.\n",
                       target, baseline, where, s.slope, lo, hi, s.n, p.smallest, p.largest, reading);
  }
  return out;
}

}  // namespace biaslab::sweep::detail
