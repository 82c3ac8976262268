// The verdict of `biaslab report`: which configuration leads where, in a few lines of
// Markdown.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sweep/report_internal.h"
#include "sweep/values.h"

namespace biaslab::sweep {
namespace {
using namespace detail;

// The series: their keys, the keys' positions among the group keys, their values.
struct Series {
  std::vector<std::string> keys;
  std::vector<size_t> at;
  std::vector<std::vector<std::string>> values;
};

// The runs the numbers leave out: failed, not run yet, without the metric.
std::string left_out_notes(const Plan& plan, const Grouping& g) {
  std::string out;
  int failed = 0, not_run = 0, no_metric = 0;
  for (const auto& grp : g.groups)
    for (const RunResult* r : grp.runs) {
      if (r->complete) no_metric += !std::isfinite(r->metric);
      else if (r->state == "failed") ++failed;
      else ++not_run;
    }
  if (failed)
    out += fmt::format("- {} run(s) failed (see results.csv for the reasons); the numbers below leave them out, so a "
                       "configuration that failed for some seeds is summarised by the others.\n",
                       failed);
  if (not_run) out += fmt::format("- {} planned run(s) have no results yet; the numbers below leave them out.\n", not_run);
  if (no_metric)
    out += fmt::format("- {} completed run(s) have no {} in summary.json (best.val_acc needs data.val_fraction > 0, "
                       "ema metrics need train.ema_decay > 0); they are left out.\n",
                       no_metric, plan.report.metric);
  return out;
}

// The best ResNet's advantage over the best pure transformer (and the best hybrid), at
// the smallest and the largest x.
std::string cnn_advantage(const Grouping& g, const Series& series, const std::vector<size_t>& x_at,
                          const std::vector<std::vector<std::string>>& xs) {
  std::string out;
  auto best_of = [&](const std::vector<std::string>& x, const std::string& family) {
    const Group* best = nullptr;
    for (const auto& s : series.values)
      if (const Group* grp = find_group(g, x_at, x, series.at, s); grp && grp->family == family && grp->stats.n > 0)
        if (!best || grp->stats.mean > best->stats.mean) best = grp;
    return best;
  };
  for (const std::string other : {"vit", "hybrid"}) {
    const Group *cnn_lo = best_of(xs.front(), "resnet"), *t_lo = best_of(xs.front(), other);
    const Group *cnn_hi = best_of(xs.back(), "resnet"), *t_hi = best_of(xs.back(), other);
    if (!cnn_lo || !t_lo || !cnn_hi || !t_hi || xs.size() < 2) continue;
    const double gap_lo = 100 * (cnn_lo->stats.mean - t_lo->stats.mean);
    const double gap_hi = 100 * (cnn_hi->stats.mean - t_hi->stats.mean);
    out += fmt::format(
        "- Best ResNet minus best {}: {:+.2f} points at {} = {}, {:+.2f} points at {} = {}; the CNN's advantage {} by "
        "{:.2f} points.\n",
        other == "vit" ? "ViT" : "hybrid", gap_lo, last_component(g.x), xs.front()[0], gap_hi, last_component(g.x),
        xs.back()[0], gap_hi < gap_lo ? "shrinks" : "grows", std::abs(gap_lo - gap_hi));
  }
  return out;
}

// With an x axis and two or more series: where the leader changes, the CNN's advantage,
// and the ranking at every x. Appends to `out` (the notes so far).
void verdict_along_x(const Plan& plan, const Grouping& g, const Series& series, std::string& out) {
  const auto x_at = positions(g.keys, {g.x});
  auto xs = distinct(g, x_at);
  std::sort(xs.begin(), xs.end(), [](const auto& a, const auto& b) {
    double va = 0, vb = 0;
    return parse_number(a[0], &va) && parse_number(b[0], &vb) ? va < vb : a[0] < b[0];
  });
  std::string previous_leader;
  std::vector<std::string> rankings;
  for (const auto& x : xs) {
    std::vector<std::pair<double, std::string>> ranked;
    for (const auto& s : series.values)
      if (const Group* grp = find_group(g, x_at, x, series.at, s); grp && grp->stats.n > 0)
        ranked.emplace_back(grp->stats.mean, label(series.keys, s));
    if (ranked.empty()) continue;
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string line = fmt::format("{} = {}: ", last_component(g.x), x[0]);
    for (size_t i = 0; i < ranked.size(); ++i)
      line += (i ? " > " : "") + fmt::format("{} ({}%)", ranked[i].second, pct(ranked[i].first));
    rankings.push_back(line);
    if (!previous_leader.empty() && previous_leader != ranked.front().second)
      out += fmt::format("- The leader changes at {} = {}: {} overtakes {}.\n", last_component(g.x), x[0],
                         ranked.front().second, previous_leader);
    previous_leader = ranked.front().second;
  }
  if (rankings.empty()) {  // no series has a finished run at any x
    out += "- No completed runs yet.\n";
    return;
  }
  if (out.find("leader changes") == std::string::npos)
    out += fmt::format("- {} leads at every {} swept.\n", previous_leader, last_component(g.x));
  out += cnn_advantage(g, series, x_at, xs);
  out += "\nRanking by " + metric_name(plan.report.metric) + " (mean over seeds):\n\n";
  for (const auto& r : rankings) out += "- " + r + "\n";
}

// No x axis: the best and worst configurations, and each key's average effect within
// every value of the first series key.
std::string verdict_without_x(const Grouping& g, const Series& series) {
  std::string out;
  const Group *best = nullptr, *worst = nullptr;
  for (const auto& grp : g.groups) {
    if (grp.stats.n == 0) continue;
    if (!best || grp.stats.mean > best->stats.mean) best = &grp;
    if (!worst || grp.stats.mean < worst->stats.mean) worst = &grp;
  }
  if (!best) return "- No completed runs yet.\n";
  out += fmt::format("- Best: {} ({}%); worst: {} ({}%).\n", label(g.keys, best->values), pct(best->stats.mean),
                     label(g.keys, worst->values), pct(worst->stats.mean));
  const auto& skeys = series.keys;
  if (skeys.size() < 2) return out;
  const auto first_at = positions(g.keys, {skeys.front()});
  for (const auto& head : distinct(g, first_at)) {
    std::string line = fmt::format("- {} = {}:", last_component(skeys.front()), head[0]);
    for (size_t k = 1; k < skeys.size(); ++k) {
      const auto k_at = positions(g.keys, {skeys[k]});
      std::string part;
      for (const auto& v : distinct(g, k_at)) {
        std::vector<double> means;
        for (const auto& grp : g.groups)
          if (pick(grp.values, first_at) == head && pick(grp.values, k_at) == v && grp.stats.n > 0)
            means.push_back(grp.stats.mean);
        if (means.empty()) continue;
        double m = 0;
        for (double x : means) m += x;
        part += fmt::format("{}{} {}%", part.empty() ? "" : ", ", v[0], pct(m / double(means.size())));
      }
      line += fmt::format(" {} ({});", last_component(skeys[k]), part);
    }
    line.back() = '.';
    out += line + " (each value's mean over the other keys' settings)\n";
  }
  return out;
}

}  // namespace

std::string verdict(const Plan& plan, const Grouping& g) {
  Series series;
  series.keys = series_keys(plan, g);
  series.at = positions(g.keys, series.keys);
  series.values = distinct(g, series.at);
  std::string out = left_out_notes(plan, g);
  if (!g.x.empty() && series.values.size() >= 2) {
    verdict_along_x(plan, g, series, out);
    return out;
  }
  return out + verdict_without_x(g, series);
}

}  // namespace biaslab::sweep
