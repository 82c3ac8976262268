#include "sweep/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <tuple>
#include <set>

#include "core/errors.h"
#include "core/fs.h"
#include "config/suggest.h"
#include "core/output_folder.h"
#include "sweep/report_internal.h"

namespace fs = std::filesystem;

namespace biaslab::sweep {
namespace {

using detail::ci_text;
using detail::csv_cell;
using detail::mean_sd_text;
using detail::non_seed_axes;
using detail::value_of;

struct Sweep {
  fs::path dir;
  Plan plan;
  std::vector<RunResult> results;
  std::vector<std::string> own_keys;  ///< non-seed axes the other sweeps lack: they name the arms
};

// "a, b", or "none".
std::string joined(const std::vector<std::string>& v) { return v.empty() ? "none" : join(v); }

std::string run_path(const Sweep& s, const RunResult& r) { return (s.dir / "runs" / r.run->name).string(); }

// The CSV cells n,mean,sd,ci95_low,ci95_high (fractions).
std::string stats_cells(const Stats& s) { return std::to_string(s.n) + "," + detail::stats_csv(s); }

// How `dir` is written in the reproduce line: relative to `out_dir` when there is one.
std::string shown_path(const fs::path& dir, const fs::path& out_dir) {
  if (out_dir.empty()) return dir.string();
  std::error_code ec;
  // absolute first: weakly_canonical leaves a relative path none of whose parts exists relative.
  const auto full = [&](const fs::path& p) { return fs::weakly_canonical(fs::absolute(p), ec); };
  const fs::path rel = fs::relative(full(dir), full(out_dir), ec);
  return ec || rel.empty() ? fs::absolute(dir).string() : rel.generic_string();
}

// The sweeps, read in order (the first is the reference), with no directory twice.
// A deque: results point into their plan's runs, so a Sweep must not move.
std::deque<Sweep> read_sweeps(const std::vector<fs::path>& dirs) {
  if (dirs.size() < 2)
    throw ConfigError("compare: give a reference sweep directory and at least one more (got " +
                      std::to_string(dirs.size()) + ")");
  std::deque<Sweep> sweeps;
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const auto& seen : sweeps)
      if (fs::equivalent(seen.dir, dir, ec))
        throw ConfigError("compare: " + dir.string() + " is given twice (as " + seen.dir.string() + ")");
    Sweep& s = sweeps.emplace_back();
    s.dir = dir;
    s.plan = read_plan(dir);
  }
  return sweeps;
}

// A sweep's seed axes as a set (sorted), to compare with another sweep's.
std::vector<std::string> sorted_seed_axes(const Plan& plan) {
  std::vector<std::string> seeds = detail::seed_axes(plan);
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

// The seed axes that pair the runs: every sweep must have the same ones.
std::vector<std::string> common_seed_axes(const std::deque<Sweep>& sweeps) {
  const Sweep& ref = sweeps.front();
  const std::vector<std::string> seeds = sorted_seed_axes(ref.plan);
  if (seeds.empty())
    throw ConfigError("compare: " + ref.dir.string() + " (sweep '" + ref.plan.name +
                      "') has no seed axis (runtime.seed): its runs cannot be paired with another sweep's");
  for (const auto& s : sweeps)
    if (sorted_seed_axes(s.plan) != seeds)
      throw ConfigError("compare: " + s.dir.string() + " (sweep '" + s.plan.name + "') has the seed axes [" +
                        joined(sorted_seed_axes(s.plan)) + "], " + ref.dir.string() + " has [" + joined(seeds) +
                        "]: runs are paired by the same seed values, so both need the same seed axes");
  return seeds;
}

// The non-seed axes every sweep has (the context), in the reference sweep's order.
std::vector<std::string> shared_axes(const std::deque<Sweep>& sweeps) {
  std::vector<std::string> shared;
  for (const auto& k : non_seed_axes(sweeps.front().plan))
    if (std::all_of(sweeps.begin(), sweeps.end(), [&](const Sweep& s) {
          const auto axes = non_seed_axes(s.plan);
          return std::find(axes.begin(), axes.end(), k) != axes.end();
        }))
      shared.push_back(k);
  return shared;
}

struct Arm {
  const Sweep* sweep;
  std::vector<std::string> values;  ///< of the sweep's own keys
  std::string label;
};

// One complete run kept for the comparison.
struct Entry {
  size_t arm;
  std::vector<std::string> context, replicate;
  const RunResult* result;
};

// Every run of every sweep, sorted into arms (in sweep order, then plan order), contexts
// and the runs kept; the others are listed.
struct Pairing {
  std::vector<std::string> seeds, context_keys;
  std::vector<Arm> arms;
  std::vector<std::vector<std::string>> contexts;  ///< in first-appearance order
  std::set<std::pair<size_t, std::vector<std::string>>> planned;  ///< (arm, context) with a planned run
  std::vector<Entry> entries;
  std::vector<std::string> left_out;
};

Pairing sort_runs(const std::deque<Sweep>& sweeps, std::vector<std::string> seeds,
                  std::vector<std::string> context_keys, const std::string& metric) {
  Pairing p{std::move(seeds), std::move(context_keys), {}, {}, {}, {}, {}};
  for (const auto& s : sweeps)
    for (const auto& r : s.results) {
      std::vector<std::string> own, context, replicate;
      for (const auto& k : s.own_keys) own.push_back(value_of(*r.run, k));
      for (const auto& k : p.context_keys) context.push_back(value_of(*r.run, k));
      for (const auto& k : p.seeds) replicate.push_back(value_of(*r.run, k));
      auto it = std::find_if(p.arms.begin(), p.arms.end(), [&](const Arm& a) { return a.sweep == &s && a.values == own; });
      if (it == p.arms.end()) {
        p.arms.push_back(Arm{&s, own, own.empty() ? s.plan.name : detail::label(s.own_keys, own)});
        it = std::prev(p.arms.end());
      }
      const size_t arm = size_t(it - p.arms.begin());
      if (std::find(p.contexts.begin(), p.contexts.end(), context) == p.contexts.end()) p.contexts.push_back(context);
      p.planned.emplace(arm, context);
      // Named by sweep and run, not path: the page reads the same from any directory.
      const std::string run = s.plan.name + ": " + r.run->name;
      if (!r.complete)
        p.left_out.push_back(run + " (" + r.state + ")");
      else if (!r.drift.empty())
        p.left_out.push_back(run + " (ran another config than planned: " + r.drift + ")");
      else if (!std::isfinite(r.metric))
        p.left_out.push_back(run + " (its summary.json has no " + metric + ")");
      else
        p.entries.push_back(Entry{arm, context, replicate, &r});
    }
  // Arms of two sweeps with the same name are told apart by their sweep's name.
  std::map<std::string, int> uses;
  for (const auto& a : p.arms) ++uses[a.label];
  for (auto& a : p.arms)
    if (uses[a.label] > 1 && a.label != a.sweep->plan.name) a.label = a.sweep->plan.name + ": " + a.label;
  return p;
}

// The differences other - ref over the seeds both arms have in `context`.
std::vector<double> paired_diffs(const Pairing& p, size_t ref, size_t other, const std::vector<std::string>& context) {
  std::vector<double> diffs;
  for (const auto& a : p.entries) {
    if (a.arm != ref || a.context != context) continue;
    for (const auto& b : p.entries) {
      if (b.arm != other || b.context != context || b.replicate != a.replicate) continue;
      if (a.result->dataset != b.result->dataset || a.result->test_size != b.result->test_size)
        throw ConfigError(fmt::format(
            "compare: {} and {} have the same seed but were tested on different data ({} with {} test images "
            "vs {} with {}): their accuracies cannot be paired",
            run_path(*p.arms[ref].sweep, *a.result), run_path(*p.arms[other].sweep, *b.result), a.result->dataset, a.result->test_size,
            b.result->dataset, b.result->test_size));
      diffs.push_back(b.result->metric - a.result->metric);
    }
  }
  return diffs;
}

// A table's leading context columns: Markdown header, CSV header, Markdown rule; and a row's.
struct ContextCells {
  std::string md, csv;
};
ContextCells context_header(const std::vector<std::string>& keys, std::string* rule) {
  ContextCells h;
  for (const auto& k : keys) {
    h.md += last_component(k) + " | ";
    h.csv += csv_cell(k) + ",";
    *rule += "---|";
  }
  return h;
}
ContextCells context_row(const std::vector<std::string>& values) {
  ContextCells r;
  for (const auto& v : values) {
    r.md += v + " | ";
    r.csv += csv_cell(v) + ",";
  }
  return r;
}

// arms.csv and the Runs table: per context and arm with a planned run.
std::pair<std::string, std::string> arm_tables(const Pairing& p, const std::string& what) {
  std::string rule;
  const ContextCells h = context_header(p.context_keys, &rule);
  std::string csv = h.csv + "arm,sweep,n,mean,sd,ci95_low,ci95_high\n";
  std::string md = "| " + h.md + "arm | sweep | " + what + " (%), mean ± sd | 95% CI | runs |\n|" + rule +
                   "---|---|---|---|---|\n";
  for (const auto& context : p.contexts)
    for (size_t a = 0; a < p.arms.size(); ++a) {
      if (!p.planned.count({a, context})) continue;
      std::vector<double> values;
      for (const auto& e : p.entries)
        if (e.arm == a && e.context == context) values.push_back(e.result->metric);
      const Stats st = describe(values);
      const ContextCells row = context_row(context);
      const std::string& sweep = p.arms[a].sweep->plan.name;
      csv += row.csv + csv_cell(p.arms[a].label) + "," + csv_cell(sweep) + "," + stats_cells(st) + "\n";
      md += "| " + row.md + p.arms[a].label + " | " + sweep + " | " + mean_sd_text(st, false) + " | " +
            ci_text(st, false) + " | " + std::to_string(st.n) + " |\n";
    }
  return {csv, md};
}

// pairs.csv and the Paired differences table: per context, each compared arm minus each
// reference arm, where both have runs planned.
std::pair<std::string, std::string> pair_tables(const Pairing& p, const Sweep* reference) {
  std::string rule;
  const ContextCells h = context_header(p.context_keys, &rule);
  std::string csv = h.csv + "arm,reference,n_pairs,diff_mean,diff_sd,diff_ci95_low,diff_ci95_high\n";
  std::string md = "| " + h.md + "arm | minus | paired difference (points), mean ± sd | 95% CI | pairs |\n|" + rule +
                   "---|---|---|---|---|\n";
  for (const auto& context : p.contexts)
    for (size_t ref = 0; ref < p.arms.size(); ++ref) {
      if (p.arms[ref].sweep != reference || !p.planned.count({ref, context})) continue;
      for (size_t other = 0; other < p.arms.size(); ++other) {
        if (p.arms[other].sweep == reference || !p.planned.count({other, context})) continue;
        const Stats st = describe(paired_diffs(p, ref, other, context));
        const ContextCells row = context_row(context);
        csv += row.csv + csv_cell(p.arms[other].label) + "," + csv_cell(p.arms[ref].label) + "," + stats_cells(st) +
               "\n";
        md += "| " + row.md + p.arms[other].label + " | " + p.arms[ref].label + " | " + mean_sd_text(st, true) + " | " +
              ci_text(st, true) + " | " + std::to_string(st.n) + " |\n";
      }
    }
  return {csv, md};
}

}  // namespace

Comparison compare_sweeps(const std::vector<fs::path>& dirs, const std::string& metric, const fs::path& out_dir) {
  std::deque<Sweep> sweeps = read_sweeps(dirs);
  const std::string m = metric.empty() ? sweeps.front().plan.report.metric : metric;
  if (const std::string problem = report_metric_problem(m); !problem.empty())
    throw ConfigError("compare: --metric " + m + ": " + problem);
  std::vector<std::string> seeds = common_seed_axes(sweeps);
  std::vector<std::string> context_keys = shared_axes(sweeps);
  for (auto& s : sweeps) {
    s.plan.report.metric = m;
    s.results = collect_results(Layout{s.dir}, s.plan);
    for (const auto& k : non_seed_axes(s.plan))
      if (std::find(context_keys.begin(), context_keys.end(), k) == context_keys.end()) s.own_keys.push_back(k);
  }
  const Pairing p = sort_runs(sweeps, std::move(seeds), std::move(context_keys), m);

  Comparison c;
  const std::string what = detail::metric_name(m);
  std::string arms_md, pairs_md;
  std::tie(c.arms_csv, arms_md) = arm_tables(p, what);
  std::tie(c.pairs_csv, pairs_md) = pair_tables(p, &sweeps.front());
  std::string names, command = "biaslab compare";
  for (size_t i = 0; i < sweeps.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == sweeps.size() ? " and " : ", ") + sweeps[i].plan.name;
    command += " " + shown_path(sweeps[i].dir, out_dir);
  }
  command += " --metric " + m + (out_dir.empty() ? "" : " --out .");
  std::string md = "# Paired comparison: " + names + "\n\n";
  md += "Metric: " + what + ". Reference: " + sweeps.front().plan.name + ". Runs are paired when they have the same " +
        joined(p.seeds) + (p.context_keys.empty() ? "" : " and the same " + joined(p.context_keys)) +
        "; each difference is a run of a compared sweep minus its pair in the reference sweep, so the seed-to-seed "
        "variation both share cancels. An interval that excludes 0 is a difference the seeds agree on.\n\n";
  md += "## Runs\n\n" + arms_md + "\n## Paired differences\n\n" + pairs_md + "\n";
  if (!p.left_out.empty()) {
    md += "## Left out\n\n";
    for (const auto& l : p.left_out) md += "- " + l + "\n";
    md += "\n";
  }
  md += "Reproduce" + std::string(out_dir.empty() ? "" : ", from this folder") + ": `" + command + "`\n";
  c.markdown = md;
  return c;
}

std::vector<fs::path> write_comparison(const Comparison& c, const fs::path& out_dir) {
  claim_output_folder(out_dir, "--out", "a biaslab comparison folder", [](const fs::path& dir) {
    return fs::is_regular_file(dir / "compare.md") && fs::is_regular_file(dir / "pairs.csv");
  });
  fs::create_directories(out_dir);
  const std::vector<std::pair<std::string, const std::string*>> files = {
      {"arms.csv", &c.arms_csv}, {"pairs.csv", &c.pairs_csv}, {"compare.md", &c.markdown}};
  std::vector<fs::path> written;
  for (const auto& [name, text] : files) {
    atomic_write(out_dir / name, *text);
    written.push_back(out_dir / name);
  }
  return written;
}

}  // namespace biaslab::sweep
