// The plots of `biaslab report`: the metric against the x axis, grouped bars and
// learning curves.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/opencv_support.h"
#include "plot/chart.h"
#include "sweep/report_internal.h"
#include "sweep/values.h"

namespace fs = std::filesystem;

namespace biaslab::sweep::detail {
namespace {

// What every plot draws from: the series, the x values and the metric.
struct PlotContext {
  const Plan& plan;
  const Grouping& g;
  std::vector<std::string> skeys;              ///< series keys
  std::vector<size_t> s_at;                    ///< their positions among the group keys
  std::vector<std::vector<std::string>> series;
  std::vector<size_t> x_at;
  std::vector<std::vector<std::string>> xs;    ///< distinct x values, in numeric order when all are numbers
  bool xs_numeric = false;
  std::string metric;
  std::string err_note;                        ///< " (mean, 95% CI over N seeds)" or ""
  bool is_accuracy = false;
};

PlotContext plot_context(const Plan& plan, const Grouping& g) {
  PlotContext c{plan, g, series_keys(plan, g), {}, {}, positions(g.keys, {g.x}), {}, false, plan.report.metric, "", false};
  c.s_at = positions(g.keys, c.skeys);
  c.series = distinct(g, c.s_at);
  int max_n = 0;
  for (const auto& grp : g.groups) max_n = std::max(max_n, grp.stats.n);
  c.err_note = max_n > 1 ? fmt::format(" (mean, 95% CI over {} seeds)", max_n) : "";
  c.is_accuracy = c.metric.size() >= 4 && c.metric.compare(c.metric.size() - 4, 4, "_acc") == 0;
  if (!g.x.empty()) {
    c.xs = distinct(g, c.x_at);
    bool all_numeric = true;
    for (const auto& x : c.xs) all_numeric = all_numeric && parse_number(x[0]);
    if (all_numeric)
      std::sort(c.xs.begin(), c.xs.end(), [](const auto& a, const auto& b) { return std::stod(a[0]) < std::stod(b[0]); });
    c.xs_numeric = all_numeric;
  }
  return c;
}

// The metric against a numeric x (size keys against the number of training images),
// one line per series; "" when there is nothing to draw.
std::string draw_metric_vs_x(const PlotContext& c, const fs::path& dir) {
  const Grouping& g = c.g;
  // Size keys are drawn against the number of training images.
  const bool by_size = is_size_key(g.x);
  plot::LineChart chart;
  chart.title = metric_name(c.metric) + " vs " + (by_size ? "training-set size" : last_component(g.x)) + c.err_note;
  chart.x_label = by_size ? "training images (log scale)" : last_component(g.x);
  chart.y_label = metric_name(c.metric) + " (%)";
  if (c.is_accuracy) chart.y_floor = 0, chart.y_ceil = 100;
  for (const auto& s : c.series) {
    plot::Line line;
    line.label = c.skeys.empty() ? c.plan.name : label(c.skeys, s);
    for (const auto& x : c.xs) {
      const Group* grp = find_group(g, c.x_at, x, c.s_at, s);
      if (!grp || grp->stats.n == 0) continue;
      line.x.push_back(by_size ? grp->train_size : std::stod(x[0]));
      line.y.push_back(100 * grp->stats.mean);
      line.err.push_back(100 * grp->stats.ci95_half);
    }
    if (!line.x.empty()) chart.lines.push_back(line);
  }
  double lo = 1e300, hi = 0;
  for (const auto& l : chart.lines)
    for (double x : l.x) lo = std::min(lo, x), hi = std::max(hi, x);
  chart.log_x = lo > 0 && hi / lo >= 10;
  if (by_size)
    for (const auto& l : chart.lines)
      for (double x : l.x)
        if (std::find(chart.x_ticks.begin(), chart.x_ticks.end(), x) == chart.x_ticks.end()) chart.x_ticks.push_back(x);
  if (chart.lines.empty()) return "";
  const std::string name = "accuracy_vs_" + last_component(g.x) + ".png";
  plot::draw(chart, dir / name);
  return name;
}

// Grouped bars: clusters by x (or by the first series key), bars by the other keys.
std::string draw_bars(const PlotContext& c, const fs::path& dir) {
  const Grouping& g = c.g;
  std::vector<std::string> cluster_keys = g.x.empty() ? std::vector<std::string>{g.keys.front()} : std::vector<std::string>{g.x};
  std::vector<std::string> bar_keys;
  for (const auto& k : g.keys)
    if (k != cluster_keys.front()) bar_keys.push_back(k);
  const auto c_at = positions(g.keys, cluster_keys), b_at = positions(g.keys, bar_keys);
  auto clusters = g.x.empty() ? distinct(g, c_at) : c.xs;
  const auto bars = distinct(g, b_at);
  plot::BarChart chart;
  chart.title = metric_name(c.metric) + c.err_note;
  chart.y_label = metric_name(c.metric) + " (%)";
  if (c.is_accuracy) chart.y_floor = 0, chart.y_ceil = 100;
  for (const auto& cl : clusters) chart.groups.push_back(last_component(cluster_keys.front()) + "=" + cl[0]);
  for (const auto& b : bars) {
    chart.bars.push_back(bar_keys.empty() ? c.plan.name : label(bar_keys, b));
    std::vector<double> v, e;
    for (const auto& cl : clusters) {
      const Group* grp = find_group(g, c_at, cl, b_at, b);
      const bool ok = grp && grp->stats.n > 0;
      v.push_back(ok ? 100 * grp->stats.mean : std::nan(""));
      e.push_back(ok ? 100 * grp->stats.ci95_half : 0.0);
    }
    chart.value.push_back(v);
    chart.err.push_back(e);
  }
  plot::draw(chart, dir / "bars.png");
  return "bars.png";
}

// A series' learning curve: mean test (or validation) accuracy over its complete runs at
// the steps every one of them evaluated.
plot::Line learning_curve(const Group& grp, bool val) {
  std::map<int64_t, std::vector<double>> at_step;
  int complete = 0;
  for (const RunResult* r : grp.runs) {
    if (!r->complete) continue;
    ++complete;
    for (const auto& p : r->curve) {
      const double acc = val ? p.val_acc : p.test_acc;
      if (std::isfinite(acc)) at_step[p.step].push_back(acc);
    }
  }
  plot::Line line;
  for (const auto& [step, accs] : at_step) {
    if (int(accs.size()) != complete) continue;
    double mean = 0;
    for (double a : accs) mean += a;
    line.x.push_back(double(step));
    line.y.push_back(100 * mean / double(accs.size()));
  }
  return line;
}

// Learning curves, one chart per x value (one chart without an x axis).
std::vector<std::string> draw_curves(const PlotContext& c, const fs::path& dir) {
  const Grouping& g = c.g;
  std::vector<std::string> names;
  const auto curve_clusters = g.x.empty() ? std::vector<std::vector<std::string>>{{}} : c.xs;
  // Runs that evaluated the test set only at the end (train.eval_test: final) are drawn
  // with their validation accuracy.
  bool val = false;
  for (const auto& grp : g.groups)
    for (const RunResult* r : grp.runs)
      for (const auto& p : r->curve) val = val || (!std::isfinite(p.test_acc) && std::isfinite(p.val_acc));
  const std::string what = val ? "validation accuracy" : "test accuracy";
  for (const auto& cl : curve_clusters) {
    plot::LineChart chart;
    chart.title = what + " during training" + (cl.empty() ? "" : ", " + last_component(g.x) + "=" + cl[0]);
    chart.x_label = "optimizer step";
    chart.y_label = what + " (%)";
    chart.y_floor = 0;
    chart.y_ceil = 100;
    for (const auto& s : c.series) {
      const Group* grp = cl.empty() ? find_group(g, c.s_at, s, {}, {}) : find_group(g, c.x_at, cl, c.s_at, s);
      if (!grp) continue;
      plot::Line line = learning_curve(*grp, val);
      line.label = c.skeys.empty() ? c.plan.name : label(c.skeys, s);
      if (!line.x.empty()) chart.lines.push_back(line);
    }
    if (chart.lines.empty()) continue;
    const std::string name = cl.empty() ? "curves.png" : "curves_" + last_component(g.x) + "=" + file_part(cl[0]) + ".png";
    plot::draw(chart, dir / name);
    names.push_back(name);
  }
  return names;
}

}  // namespace

std::vector<std::string> draw_plots(const Plan& plan, const Grouping& g, const fs::path& dir) {
  if (!kWithOpenCV) {
    spdlog::warn("report: no plots drawn: this biaslab was built without OpenCV (-DBIASLAB_WITH_OPENCV=OFF); "
                 "the tables are complete");
    return {};
  }
  const PlotContext c = plot_context(plan, g);
  std::vector<std::string> names;
  if (!g.x.empty() && c.xs_numeric)
    if (std::string name = draw_metric_vs_x(c, dir); !name.empty()) names.push_back(name);
  if (!g.groups.empty() && !g.keys.empty()) names.push_back(draw_bars(c, dir));
  for (auto& name : draw_curves(c, dir)) names.push_back(name);
  return names;
}

}  // namespace biaslab::sweep::detail
