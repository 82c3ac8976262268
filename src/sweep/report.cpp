#include "sweep/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "config/suggest.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/input_file.h"
#include "core/output_folder.h"
#include "sweep/report_internal.h"

namespace fs = std::filesystem;

namespace biaslab::sweep {
namespace detail {

bool is_size_key(const std::string& key) {
  static const std::set<std::string> kSizeKeys = {"data.train_fraction", "data.train_per_class"};
  return kSizeKeys.count(key) > 0;
}

std::string value_of(const PlannedRun& run, const std::string& key) {
  for (const auto& [k, v] : run.swept)
    if (k == key) return v;
  return "";
}

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:.2f}", 100 * v) : "n/a"; }

std::string signed_pct(double v) { return fmt::format("{:+.2f}", 100 * v); }

std::string stats_csv(const Stats& s) {
  const auto num = [](double v) { return fmt::format("{:.6g}", v); };
  return fmt::format("{},{},{},{}", s.n ? num(s.mean) : "", s.n > 1 ? num(s.sd) : "",
                     s.n > 1 ? num(s.mean - s.ci95_half) : "", s.n > 1 ? num(s.mean + s.ci95_half) : "");
}

std::string mean_sd_text(const Stats& s, bool difference) {
  if (s.n == 0) return "n/a";
  const std::string mean = difference ? signed_pct(s.mean) : pct(s.mean);
  return s.n > 1 ? mean + " ± " + pct(s.sd) : mean;
}

std::string ci_text(const Stats& s, bool difference) {
  if (s.n < 2) return "";
  const auto f = [&](double v) { return difference ? signed_pct(v) : pct(v); };
  return "[" + f(s.mean - s.ci95_half) + ", " + f(s.mean + s.ci95_half) + "]";
}

std::vector<std::string> non_seed_axes(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& k : plan.axes)
    if (!is_replicate_key(k)) out.push_back(k);
  return out;
}

std::vector<std::string> seed_axes(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& k : plan.axes)
    if (is_replicate_key(k)) out.push_back(k);
  return out;
}

std::string label(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  if (keys.size() == 1) return values.front();
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + last_component(keys[i]) + "=" + values[i];
  return out;
}

std::string metric_name(const std::string& metric) {
  std::string m = metric;
  if (m.size() > 4 && m.compare(m.size() - 4, 4, "_acc") == 0) m = m.substr(0, m.size() - 4) + " accuracy";
  std::replace(m.begin(), m.end(), '.', ' ');
  std::replace(m.begin(), m.end(), '_', ' ');
  return m;
}

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

std::vector<std::string> series_keys(const Plan& plan, const Grouping& g) {
  std::vector<std::string> keys;
  if (!plan.report.series.empty()) keys.push_back(plan.report.series);
  for (const auto& k : g.keys)
    if (k != g.x && k != plan.report.series) keys.push_back(k);
  return keys;
}

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

}  // namespace detail

namespace {

// A new or empty folder, or an earlier report (whose files are rewritten in place).
void claim_report_folder(const fs::path& out_dir) {
  claim_output_folder(out_dir, "--out", "a biaslab report folder", [](const fs::path& dir) {
    // results.csv with the header this function writes (the swept keys vary in between).
    std::ifstream in(dir / "results.csv");
    std::string header;
    // (family is run_family where a swept key is named family: report_tables.cpp.)
    return std::getline(in, header) && header.rfind("run,", 0) == 0 &&
           (header.find(",state,family,preset,parameters,flops_per_image,") != std::string::npos ||
            header.find(",state,run_family,preset,parameters,flops_per_image,") != std::string::npos) &&
           fs::is_regular_file(dir / "summary.md");
  });
}

// report.md: the table, the verdict and the plots on one page.
std::string report_page(const Plan& plan, size_t runs, const std::string& table, const std::string& verdict_md,
                        const std::vector<std::string>& images, const std::string& tuning_md) {
  std::string page = "# Sweep report: " + plan.name + "\n\n" +
                     fmt::format("{} planned runs; metric: {}{}.\n\n", runs, plan.report.metric,
                                 plan.report.series.empty() ? "" : "; series: " + plan.report.series);
  page += "## Summary\n\n" + table + "\n## Verdict\n\n" + verdict_md + "\n" + tuning_md + "## Plots\n\n";
  for (const auto& img : images) page += "![" + img + "](" + img + ")\n\n";
  page += "Per-run numbers: [results.csv](results.csv); grouped: [summary.csv](summary.csv).\n";
  return page;
}

// The key on the x axis of the line plot: report.x, else the (last) data-size axis.
std::string x_key(const Plan& plan) {
  std::string x = plan.report.x;
  if (x.empty())
    for (const auto& k : plan.axes)
      if (!is_replicate_key(k) && detail::is_size_key(k)) x = k;
  return x;
}

// A metric that no finished run's summary.json has (a typo such as final.tset_acc, or one
// the runs never computed, best.val_acc without a validation split) would give a report
// without numbers: refused, with the accuracies the runs do have.
void check_metric_found(const Plan& plan, const std::vector<RunResult>& results) {
  std::set<std::string> have;
  size_t complete = 0;
  for (const auto& r : results) {
    if (!r.complete) continue;
    ++complete;
    if (std::isfinite(r.metric)) return;
    have.insert(r.accuracies.begin(), r.accuracies.end());
  }
  if (complete == 0) return;
  const std::vector<std::string> names(have.begin(), have.end());
  throw CheckpointError(fmt::format("metric '{}' (report.metric of plan.json, or --metric): none of the {} finished "
                                    "runs' summary.json has it{}; they have: {}",
                                    plan.report.metric, complete, did_you_mean(plan.report.metric, names),
                                    names.empty() ? "no accuracy" : join(names)));
}

}  // namespace

Plan with_series(Plan plan, const std::string& series) {
  const std::string axes = join(detail::non_seed_axes(plan));
  const auto fail = [&](const std::string& why) {
    throw ConfigError("--series " + series + ": " + why + " (this sweep's axes: " + axes + ")");
  };
  if (std::find(plan.axes.begin(), plan.axes.end(), series) == plan.axes.end()) {
    if (std::find(plan.keys.begin(), plan.keys.end(), series) != plan.keys.end())
      fail("varies with another key in a zip group; name the group's first key");
    fail("not a swept key of sweep '" + plan.name + "'");
  }
  if (is_replicate_key(series)) fail("is a seed; the report averages over seeds");
  if (series == x_key(plan)) fail("is the report's x axis");
  plan.report.series = series;
  plan.report.gap_baseline.clear();
  plan.report.gap_target.clear();
  return plan;
}

Grouping group_results(const Plan& plan, const std::vector<RunResult>& results) {
  Grouping g;
  g.keys = detail::non_seed_axes(plan);
  g.x = x_key(plan);
  std::map<std::vector<std::string>, size_t> index;
  for (const auto& r : results) {
    std::vector<std::string> values;
    for (const auto& k : g.keys) values.push_back(detail::value_of(*r.run, k));
    auto [it, fresh] = index.emplace(values, g.groups.size());
    if (fresh) g.groups.push_back(Group{values, {}, {}, "", 0.0});
    g.groups[it->second].runs.push_back(&r);
  }
  for (auto& grp : g.groups) {
    std::vector<double> metric;
    std::set<std::string> families;
    double size_sum = 0.0;
    for (const RunResult* r : grp.runs) {
      if (!r->complete || !std::isfinite(r->metric) || !r->drift.empty()) continue;
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

ReportOutput write_report(const Layout& layout, const Plan& plan, const fs::path& out_dir, const RegimeRule& rule) {
  std::vector<RunResult> results = collect_results(layout, plan);
  for (auto& r : results) r.regime = detail::run_regime(r, rule);
  check_metric_found(plan, results);
  const Grouping g = group_results(plan, results);
  claim_report_folder(out_dir);
  fs::create_directories(out_dir);
  ReportOutput out;
  auto write = [&](const std::string& name, const std::string& content) {
    atomic_write(out_dir / name, content);
    out.files.push_back(out_dir / name);
  };
  const detail::TuningRecord tuning = detail::read_tuning(layout, plan);
  write("results.csv", detail::results_csv(plan, results, tuning));
  const detail::PairedData pairs = detail::paired_data(plan, g, results);
  const detail::PairedTables paired = detail::paired_differences(plan, pairs);
  if (!paired.csv.empty()) write("paired.csv", paired.csv);
  const detail::PairedTables gap = detail::gap_shares(plan, pairs);
  if (!gap.csv.empty()) write("gap.csv", gap.csv);
  const detail::BudgetComparison budget = detail::budget_comparison(plan, g, results);
  const detail::PairedTables budget_tables = detail::budget_tables(plan, g, budget);
  if (!budget_tables.csv.empty()) write("budget.csv", budget_tables.csv);
  const std::vector<detail::GroupRegime> regimes = detail::group_regimes(g, budget, rule);
  const std::string checks = detail::checks_markdown(results, regimes, budget, rule) + tuning.edge_check;
  if (tuning.tuned) write("tuning.csv", tuning.csv);
  const detail::SummaryTables tables = detail::summary_tables(plan, g, tuning, regimes, budget);
  write("summary.csv", tables.csv);
  const std::string slope = detail::gap_slope(plan, g, pairs, results);
  const std::string verdict_md = verdict(plan, g) + (slope.empty() ? "" : "\nThe gap against the data size:\n\n" + slope) +
                                 (budget_tables.markdown.empty() ? "" : "\nThe budget:\n\n" + budget_tables.markdown);
  out.summary_markdown = tables.markdown + "\n" + verdict_md + "\n" + checks;
  write("summary.md", "# " + plan.name + "\n\n" + out.summary_markdown);
  const std::vector<std::string> images = detail::draw_plots(plan, g, out_dir);
  for (const auto& img : images) out.files.push_back(out_dir / img);
  std::string extra = "## Checks\n\n" + checks + "\n";
  if (!paired.markdown.empty()) extra += "## Paired differences\n\n" + paired.markdown + "\n";
  if (!gap.markdown.empty()) extra += "## Gap closed\n\n" + gap.markdown + "\n";
  write("report.md", report_page(plan, results.size(), tables.markdown, verdict_md, images, extra + tuning.markdown));
  return out;
}

}  // namespace biaslab::sweep
