#include "sweep/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "core/fs.h"
#include "core/input_file.h"
#include "core/output_folder.h"
#include "plot/chart.h"
#include "sweep/values.h"

namespace fs = std::filesystem;

namespace biaslab::sweep {
namespace {

const std::set<std::string> kSizeKeys = {"data.train_fraction", "data.train_per_class"};

std::string value_of(const PlannedRun& run, const std::string& key) {
  for (const auto& [k, v] : run.swept)
    if (k == key) return v;
  return "";
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num(double v, const char* format = "{:.6g}") {
  return std::isfinite(v) ? fmt::format(fmt::runtime(format), v) : "";
}

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", 100 * v) : "n/a"; }

// "preset=vit_lite_p4, norm=none" (or the bare value for one key).
std::string label(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  if (keys.size() == 1) return values.front();
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + last_component(keys[i]) + "=" + values[i];
  return out;
}

// "final.test_acc" -> "final test accuracy"
std::string metric_name(const std::string& metric) {
  std::string m = metric;
  if (m.size() > 4 && m.compare(m.size() - 4, 4, "_acc") == 0) m = m.substr(0, m.size() - 4) + " accuracy";
  std::replace(m.begin(), m.end(), '.', ' ');
  std::replace(m.begin(), m.end(), '_', ' ');
  return m;
}

// Indices of `keys` within `all`.
std::vector<size_t> positions(const std::vector<std::string>& all, const std::vector<std::string>& keys) {
  std::vector<size_t> out;
  for (const auto& k : keys) out.push_back(size_t(std::find(all.begin(), all.end(), k) - all.begin()));
  return out;
}

std::vector<std::string> pick(const std::vector<std::string>& values, const std::vector<size_t>& at) {
  std::vector<std::string> out;
  for (size_t i : at) out.push_back(values[i]);
  return out;
}

// The series keys: group keys except x, with report.series first.
std::vector<std::string> series_keys(const Plan& plan, const Grouping& g) {
  std::vector<std::string> keys;
  if (!plan.report.series.empty()) keys.push_back(plan.report.series);
  for (const auto& k : g.keys)
    if (k != g.x && k != plan.report.series) keys.push_back(k);
  return keys;
}

// Distinct values of `at` in first-appearance order.
std::vector<std::vector<std::string>> distinct(const Grouping& g, const std::vector<size_t>& at) {
  std::vector<std::vector<std::string>> out;
  for (const auto& grp : g.groups) {
    auto v = pick(grp.values, at);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

const Group* find_group(const Grouping& g, const std::vector<size_t>& at_a, const std::vector<std::string>& a,
                        const std::vector<size_t>& at_b, const std::vector<std::string>& b) {
  for (const auto& grp : g.groups)
    if (pick(grp.values, at_a) == a && pick(grp.values, at_b) == b) return &grp;
  return nullptr;
}

}  // namespace

Grouping group_results(const Plan& plan, const std::vector<RunResult>& results) {
  Grouping g;
  for (const auto& k : plan.axes)
    if (!is_replicate_key(k)) g.keys.push_back(k);
  g.x = plan.report.x;
  if (g.x.empty())
    for (const auto& k : g.keys)
      if (kSizeKeys.count(k)) g.x = k;
  std::map<std::vector<std::string>, size_t> index;
  for (const auto& r : results) {
    std::vector<std::string> values;
    for (const auto& k : g.keys) values.push_back(value_of(*r.run, k));
    auto [it, fresh] = index.emplace(values, g.groups.size());
    if (fresh) g.groups.push_back(Group{values, {}, {}, "", 0.0});
    g.groups[it->second].runs.push_back(&r);
  }
  for (auto& grp : g.groups) {
    std::vector<double> metric;
    std::set<std::string> families;
    double size_sum = 0.0;
    for (const RunResult* r : grp.runs) {
      if (!r->complete || !std::isfinite(r->metric)) continue;
      metric.push_back(r->metric);
      families.insert(r->family);
      size_sum += double(r->train_size);
    }
    grp.stats = describe(metric);
    if (families.size() == 1) grp.family = *families.begin();
    if (!metric.empty()) grp.train_size = size_sum / double(metric.size());
  }
  return g;
}

std::string verdict(const Plan& plan, const Grouping& g) {
  std::string out;
  const std::string metric = metric_name(plan.report.metric);
  const auto skeys = series_keys(plan, g);
  const auto s_at = positions(g.keys, skeys);
  const auto series = distinct(g, s_at);
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

  if (!g.x.empty() && series.size() >= 2) {
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
      for (const auto& s : series)
        if (const Group* grp = find_group(g, x_at, x, s_at, s); grp && grp->stats.n > 0)
          ranked.emplace_back(grp->stats.mean, label(skeys, s));
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
    if (out.find("leader changes") == std::string::npos && !previous_leader.empty())
      out += fmt::format("- {} leads at every {} swept.\n", previous_leader, last_component(g.x));
    // The CNN's advantage over the best pure transformer (and the hybrid's), smallest to largest x.
    auto best_of = [&](const std::vector<std::string>& x, const std::string& family) {
      const Group* best = nullptr;
      for (const auto& s : series)
        if (const Group* grp = find_group(g, x_at, x, s_at, s); grp && grp->family == family && grp->stats.n > 0)
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
    out += "\nRanking by " + metric + " (mean over seeds):\n\n";
    for (const auto& r : rankings) out += "- " + r + "\n";
    return out;
  }

  // No x axis: the best and worst configurations, and each key's average effect within
  // every value of the first series key.
  const Group *best = nullptr, *worst = nullptr;
  for (const auto& grp : g.groups) {
    if (grp.stats.n == 0) continue;
    if (!best || grp.stats.mean > best->stats.mean) best = &grp;
    if (!worst || grp.stats.mean < worst->stats.mean) worst = &grp;
  }
  if (!best) return out + "- No completed runs yet.\n";
  out += fmt::format("- Best: {} ({}%); worst: {} ({}%).\n", label(g.keys, best->values), pct(best->stats.mean),
                     label(g.keys, worst->values), pct(worst->stats.mean));
  if (skeys.size() >= 2) {
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
  }
  return out;
}

ReportOutput write_report(const Layout& layout, const Plan& plan, const fs::path& out_dir) {
  const std::vector<RunResult> results = collect_results(layout, plan);
  const Grouping g = group_results(plan, results);
  // A new or empty folder, or an earlier report (whose files are rewritten in place).
  claim_output_folder(out_dir, "--out", "a biaslab report folder", [](const fs::path& dir) {
    // results.csv with the header this function writes (the swept keys vary in between).
    std::ifstream in(dir / "results.csv");
    std::string header;
    return std::getline(in, header) && header.rfind("run,", 0) == 0 &&
           header.find(",state,family,preset,parameters,flops_per_image,") != std::string::npos &&
           fs::is_regular_file(dir / "summary.md");
  });
  fs::create_directories(out_dir);
  ReportOutput out;
  auto write = [&](const std::string& name, const std::string& content) {
    atomic_write(out_dir / name, content);
    out.files.push_back(out_dir / name);
  };

  // results.csv
  std::string csv = "run";
  for (const auto& k : plan.keys) csv += "," + csv_cell(k);
  csv += ",state,family,preset,parameters,flops_per_image,train_size,images_seen,steps,epochs," +
         csv_cell(plan.report.metric) +
         ",final_test_acc,final_test_loss,best_epoch,best_test_acc,best_val_acc,train_time_s,process_wall_time_s,reason\n";
  for (const auto& r : results) {
    csv += csv_cell(r.run->name);
    for (const auto& k : plan.keys) csv += "," + csv_cell(value_of(*r.run, k));
    csv += fmt::format(",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.state, r.family, r.preset,
                       r.complete ? std::to_string(r.parameters) : "", r.complete ? std::to_string(r.flops_per_image) : "",
                       r.complete ? std::to_string(r.train_size) : "", r.complete ? std::to_string(r.images_seen) : "",
                       r.complete ? std::to_string(r.steps) : "", r.complete ? std::to_string(r.epochs) : "",
                       num(r.metric), num(r.final_test_acc), num(r.final_test_loss),
                       r.complete ? std::to_string(r.best_epoch) : "", num(r.best_test_acc), num(r.best_val_acc),
                       num(r.train_time_s, "{:.1f}"), num(r.wall_time_s, "{:.1f}"), csv_cell(r.reason));
  }
  write("results.csv", csv);

  // summary.csv and the Markdown table
  const std::string m = plan.report.metric;
  std::string scsv;
  for (const auto& k : g.keys) scsv += csv_cell(k) + ",";
  scsv += "family,train_size,n,planned," + m + "_mean," + m + "_sd," + m + "_ci95_low," + m + "_ci95_high\n";
  std::string md = "| ";
  for (const auto& k : g.keys) md += last_component(k) + " | ";
  md += "family | train images | n | " + metric_name(m) + " (%) mean ± sd | 95% CI | params | MFLOPs/img |\n|";
  for (size_t i = 0; i < g.keys.size() + 7; ++i) md += "---|";
  md += "\n";
  for (const auto& grp : g.groups) {
    const Stats& s = grp.stats;
    for (const auto& v : grp.values) scsv += csv_cell(v) + ",";
    const std::string size = s.n ? num(grp.train_size, "{:.0f}") : "";
    int failed = 0;
    for (const RunResult* r : grp.runs) failed += r->state == "failed";
    scsv += fmt::format("{},{},{},{},{},{},{},{}\n", grp.family, size, s.n, grp.runs.size(),
                        s.n ? num(s.mean) : "", s.n > 1 ? num(s.sd) : "", s.n > 1 ? num(s.mean - s.ci95_half) : "",
                        s.n > 1 ? num(s.mean + s.ci95_half) : "");
    const RunResult* any = nullptr;
    for (const RunResult* r : grp.runs)
      if (r->complete) any = r;
    md += "| ";
    for (const auto& v : grp.values) md += v + " | ";
    md += fmt::format("{} | {} | {}/{}{} | {} | {} | {} | {} |\n", grp.family, size, s.n, grp.runs.size(),
                      failed ? fmt::format(" ({} failed)", failed) : "", s.n ? pct(s.mean) + (s.n > 1 ? " ± " + pct(s.sd) : "") : "n/a",
                      s.n > 1 ? "[" + pct(s.mean - s.ci95_half) + ", " + pct(s.mean + s.ci95_half) + "]" : "",
                      any ? fmt::format("{:.3f} M", any->parameters / 1e6) : "",
                      any ? fmt::format("{:.1f}", any->flops_per_image / 1e6) : "");
  }
  write("summary.csv", scsv);
  const std::string verdict_md = verdict(plan, g);
  out.summary_markdown = md + "\n" + verdict_md;
  write("summary.md", "# " + plan.name + "\n\n" + out.summary_markdown);

  // Plots
  const auto skeys = series_keys(plan, g);
  const auto s_at = positions(g.keys, skeys);
  const auto series = distinct(g, s_at);
  int max_n = 0;
  for (const auto& grp : g.groups) max_n = std::max(max_n, grp.stats.n);
  const std::string err_note = max_n > 1 ? fmt::format(" (mean, 95% CI over {} seeds)", max_n) : "";
  std::vector<std::string> images;
  const bool is_accuracy = m.size() >= 4 && m.compare(m.size() - 4, 4, "_acc") == 0;
  const auto x_at = positions(g.keys, {g.x});
  std::vector<std::vector<std::string>> xs;
  if (!g.x.empty()) {
    xs = distinct(g, x_at);
    bool all_numeric = true;
    for (const auto& x : xs) all_numeric = all_numeric && parse_number(x[0]);
    if (all_numeric) {
      std::sort(xs.begin(), xs.end(), [](const auto& a, const auto& b) { return std::stod(a[0]) < std::stod(b[0]); });
      // Size keys are drawn against the number of training images.
      const bool by_size = kSizeKeys.count(g.x) > 0;
      plot::LineChart chart;
      chart.title = metric_name(m) + " vs " + (by_size ? "training-set size" : last_component(g.x)) + err_note;
      chart.x_label = by_size ? "training images (log scale)" : last_component(g.x);
      chart.y_label = metric_name(m) + " (%)";
      if (is_accuracy) chart.y_floor = 0, chart.y_ceil = 100;
      for (const auto& s : series) {
        plot::Line line;
        line.label = skeys.empty() ? plan.name : label(skeys, s);
        for (const auto& x : xs) {
          const Group* grp = find_group(g, x_at, x, s_at, s);
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
      if (!chart.lines.empty()) {
        const std::string name = "accuracy_vs_" + last_component(g.x) + ".png";
        plot::draw(chart, out_dir / name);
        out.files.push_back(out_dir / name);
        images.push_back(name);
      }
    }
  }
  // Grouped bars: clusters by x (or by the first series key), bars by the other keys.
  if (!g.groups.empty() && !g.keys.empty()) {
    std::vector<std::string> cluster_keys = g.x.empty() ? std::vector<std::string>{g.keys.front()} : std::vector<std::string>{g.x};
    std::vector<std::string> bar_keys;
    for (const auto& k : g.keys)
      if (k != cluster_keys.front()) bar_keys.push_back(k);
    const auto c_at = positions(g.keys, cluster_keys), b_at = positions(g.keys, bar_keys);
    auto clusters = g.x.empty() ? distinct(g, c_at) : xs;
    const auto bars = distinct(g, b_at);
    plot::BarChart chart;
    chart.title = metric_name(m) + err_note;
    chart.y_label = metric_name(m) + " (%)";
    if (is_accuracy) chart.y_floor = 0, chart.y_ceil = 100;
    for (const auto& c : clusters) chart.groups.push_back(last_component(cluster_keys.front()) + "=" + c[0]);
    for (const auto& b : bars) {
      chart.bars.push_back(bar_keys.empty() ? plan.name : label(bar_keys, b));
      std::vector<double> v, e;
      for (const auto& c : clusters) {
        const Group* grp = find_group(g, c_at, c, b_at, b);
        const bool ok = grp && grp->stats.n > 0;
        v.push_back(ok ? 100 * grp->stats.mean : std::nan(""));
        e.push_back(ok ? 100 * grp->stats.ci95_half : 0.0);
      }
      chart.value.push_back(v);
      chart.err.push_back(e);
    }
    plot::draw(chart, out_dir / "bars.png");
    out.files.push_back(out_dir / "bars.png");
    images.push_back("bars.png");
  }
  // Learning curves: mean test accuracy over seeds at the steps every seed evaluated.
  const auto curve_clusters = g.x.empty() ? std::vector<std::vector<std::string>>{{}} : xs;
  for (const auto& c : curve_clusters) {
    plot::LineChart chart;
    chart.title = "test accuracy during training" + (c.empty() ? "" : ", " + last_component(g.x) + "=" + c[0]);
    chart.x_label = "optimizer step";
    chart.y_label = "test accuracy (%)";
    chart.y_floor = 0;
    chart.y_ceil = 100;
    for (const auto& s : series) {
      const Group* grp = c.empty() ? find_group(g, s_at, s, {}, {}) : find_group(g, x_at, c, s_at, s);
      if (!grp) continue;
      std::map<int64_t, std::vector<double>> at_step;
      int complete = 0;
      for (const RunResult* r : grp->runs) {
        if (!r->complete) continue;
        ++complete;
        for (const auto& p : r->curve) at_step[p.step].push_back(p.test_acc);
      }
      plot::Line line;
      line.label = skeys.empty() ? plan.name : label(skeys, s);
      for (const auto& [step, accs] : at_step) {
        if (int(accs.size()) != complete) continue;
        double mean = 0;
        for (double a : accs) mean += a;
        line.x.push_back(double(step));
        line.y.push_back(100 * mean / double(accs.size()));
      }
      if (!line.x.empty()) chart.lines.push_back(line);
    }
    if (chart.lines.empty()) continue;
    const std::string name = c.empty() ? "curves.png" : "curves_" + last_component(g.x) + "=" + file_part(c[0]) + ".png";
    plot::draw(chart, out_dir / name);
    out.files.push_back(out_dir / name);
    images.push_back(name);
  }

  std::string page = "# Sweep report: " + plan.name + "\n\n" + fmt::format("{} planned runs; metric: {}.\n\n", results.size(), m);
  page += "## Summary\n\n" + md + "\n## Verdict\n\n" + verdict_md + "\n## Plots\n\n";
  for (const auto& img : images) page += "![" + img + "](" + img + ")\n\n";
  page += "Per-run numbers: [results.csv](results.csv); grouped: [summary.csv](summary.csv).\n";
  write("report.md", page);
  return out;
}

}  // namespace biaslab::sweep
