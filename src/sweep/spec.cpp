#include "sweep/spec.h"

#include "config/yaml_io.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/fs.h"
#include "sweep/halving.h"
#include "sweep/values.h"

namespace fs = std::filesystem;

namespace biaslab::sweep {
namespace {

// Reading YAML values (kept together): where a node stands, its text, dotted keys,
// `set` mappings and lists of swept values.

struct Reader {
  std::string file;
  std::string where(const YAML::Node& n) const {
    const int line = n.Mark().line;
    return line >= 0 ? file + ":" + std::to_string(line + 1) : file;
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    throw ConfigError(where(n) + ": " + what);
  }
};

// A value as the YAML text --set parses back: scalars as written, sequences and
// mappings in flow style.
std::string value_text(const YAML::Node& n) { return yaml_value_text(n, "~"); }

// A name that is one plain word: a variants axis, a tune param of variants.
bool is_plain_word(const std::string& name) {
  return !name.empty() && name.find('.') == std::string::npos && name_part(name) == name;
}

void check_key(const Reader& r, const YAML::Node& key_node) {
  const std::string key = key_node.as<std::string>();
  const bool ok = !key.empty() && key.front() != '.' && key.back() != '.' &&
                  std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_' || c == '.'; });
  if (!ok) r.fail(key_node, "'" + key + "' is not a dotted config key (e.g. model.depth)");
  if (key.find('.') == std::string::npos && key != "name")
    r.fail(key_node, "'" + key + "' is not a dotted config key: name the section too (e.g. model." + key + ")");
}

std::vector<KeyValue> read_set(const Reader& r, const YAML::Node& node, const std::string& what) {
  if (!node.IsMap()) r.fail(node, what + ": expected a mapping of dotted keys to values, e.g. {train.epochs: 5}");
  std::vector<KeyValue> out;
  for (const auto& kv : node) {
    check_key(r, kv.first);
    out.emplace_back(kv.first.as<std::string>(), value_text(kv.second));
  }
  return out;
}

std::vector<std::string> read_values(const Reader& r, const YAML::Node& key, const YAML::Node& node,
                                     const std::string& section) {
  const std::string k = key.as<std::string>();
  if (!node.IsSequence() || node.size() == 0)
    r.fail(node, section + "." + k + ": expected a non-empty list of values, e.g. [1, 2, 3]");
  std::vector<std::string> values;
  for (const auto& v : node) {
    const std::string text = value_text(v);
    for (const auto& seen : values)
      if (same_value(seen, text)) r.fail(v, section + "." + k + ": value '" + text + "' is listed twice");
    values.push_back(text);
  }
  return values;
}

}  // namespace

std::string last_component(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

std::string report_metric_problem(const std::string& v) {
  const bool accuracy = v.size() > 4 && v.compare(v.size() - 4, 4, "_acc") == 0;
  if ((v.rfind("final.", 0) == 0 || v.rfind("best.", 0) == 0) && accuracy) return "";
  return "expected final.<accuracy> or best.<accuracy> from summary.json (final.test_acc, best.val_acc, "
         "final.ema_test_acc, ...), got '" + v + "'";
}

bool is_replicate_key(const std::string& key) {
  const std::string last = last_component(key);
  return last.size() >= 4 && last.compare(last.size() - 4, 4, "seed") == 0;
}

namespace {

// The top-level keys: each known, none twice.
void check_top_keys(const Reader& r, const YAML::Node& doc) {
  static const std::vector<std::string> kTop = {"name", "base", "set", "grid", "zip", "variants", "overrides", "report",
                                                "tune", "max_runs"};
  std::set<std::string> top_seen;
  for (const auto& kv : doc) {
    const std::string k = kv.first.as<std::string>();
    if (!top_seen.insert(k).second) r.fail(kv.first, "'" + k + "' appears twice");
    if (std::find(kTop.begin(), kTop.end(), k) == kTop.end())
      r.fail(kv.first, "unknown sweep key '" + k +
                           "'; expected one of: name, base, set, grid, zip, variants, overrides, report, tune, max_runs");
  }
}

// name (default: the file's stem) and max_runs.
void read_name_and_limit(const Reader& r, const fs::path& file, const YAML::Node& doc, SweepSpec& spec) {
  spec.name = doc["name"] ? doc["name"].as<std::string>() : file.stem().string();
  if (spec.name.empty() || spec.name == "." || spec.name == ".." || name_part(spec.name) != spec.name)
    throw ConfigError(r.file + ": name '" + spec.name + "' must use only letters, digits, '.', '_', '+', '-'");
  if (const YAML::Node m = doc["max_runs"]; m) {
    int64_t v = 0;
    if (!m.IsScalar() || !YAML::convert<int64_t>::decode(m, v) || v < 1)
      r.fail(m, "max_runs: expected a positive integer, got '" + m.as<std::string>("?") + "'");
    spec.max_runs = v;
  }
}

// base: a config file (relative to the sweep file) or an inline config mapping.
void read_base(const Reader& r, const fs::path& file, const YAML::Node& doc, SweepSpec& spec) {
  const YAML::Node base = doc["base"];
  if (!base) throw ConfigError(r.file + ": missing 'base' (the config every run starts from: a path or a mapping)");
  if (base.IsScalar()) {
    fs::path p = base.as<std::string>();
    if (p.is_relative()) p = file.parent_path() / p;
    if (!fs::exists(p)) r.fail(base, "base config " + p.string() + " not found (paths are relative to the sweep file)");
    spec.base_yaml = read_config_text(p, "base config");
    spec.base_source = p.lexically_normal().string();
    spec.base_file = p;
  } else if (base.IsMap()) {
    YAML::Emitter e;
    e << base;
    spec.base_yaml = std::string(e.c_str()) + "\n";
    spec.base_source = r.file + " (base)";
  } else {
    r.fail(base, "base: expected a config file path or a config mapping");
  }
}

// The axes of the grid, zip and variants sections. `swept` gathers every swept key and
// variants axis name, so that none is swept twice.
struct AxisReader {
  const Reader& r;
  SweepSpec& spec;
  std::set<std::string> swept;

  void claim(const YAML::Node& key) {
    check_key(r, key);
    const std::string k = key.as<std::string>();
    if (!swept.insert(k).second) r.fail(key, "'" + k + "' is swept twice (grid and zip keys must be distinct)");
    for (const auto& [fixed, v] : spec.set)
      if (fixed == k) r.fail(key, "'" + k + "' is both in set: and swept");
  }

  void grid(const YAML::Node& grid) {
    if (!grid.IsMap()) r.fail(grid, "grid: expected a mapping of dotted keys to lists of values");
    for (const auto& kv : grid) {
      claim(kv.first);
      Axis axis;
      axis.keys = {kv.first.as<std::string>()};
      for (auto& v : read_values(r, kv.first, kv.second, "grid")) axis.points.push_back({v});
      spec.axes.push_back(std::move(axis));
    }
  }

  void zip(const YAML::Node& zip) {
    if (!zip.IsSequence()) r.fail(zip, "zip: expected a list of groups, each a mapping of keys to equally long lists");
    for (const auto& group : zip) {
      if (!group.IsMap() || group.size() == 0) r.fail(group, "zip: each group is a mapping of keys to equally long lists");
      Axis axis;
      std::vector<std::vector<std::string>> columns;
      for (const auto& kv : group) {
        claim(kv.first);
        axis.keys.push_back(kv.first.as<std::string>());
        columns.push_back(read_values(r, kv.first, kv.second, "zip"));
        if (columns.back().size() != columns.front().size())
          r.fail(kv.second, "zip: '" + axis.keys.back() + "' has " + std::to_string(columns.back().size()) +
                                " values but '" + axis.keys.front() + "' has " + std::to_string(columns.front().size()) +
                                "; keys of a zip group vary together and need equally long lists");
      }
      for (size_t i = 0; i < columns.front().size(); ++i) {
        std::vector<std::string> point;
        for (const auto& c : columns) point.push_back(c[i]);
        axis.points.push_back(std::move(point));
      }
      spec.axes.push_back(std::move(axis));
    }
  }

  void variants(const YAML::Node& variants) {
    if (!variants.IsMap())
      r.fail(variants, "variants: expected {AXIS: {LABEL: {dotted.key: value, ...}, ...}}, e.g. "
                       "{model: {cnn: {model.preset: resnet20}, vit: {model.preset: vit_lite_p4}}}");
    for (const auto& kv : variants) {
      const std::string axis_name = kv.first.as<std::string>();
      if (!is_plain_word(axis_name))
        r.fail(kv.first, "variants: axis name '" + axis_name + "' must be a plain word (no dots)");
      if (!swept.insert(axis_name).second) r.fail(kv.first, "'" + axis_name + "' is swept twice");
      if (!kv.second.IsMap() || kv.second.size() == 0)
        r.fail(kv.second, "variants." + axis_name + ": expected a mapping of labels to override mappings");
      Axis axis;
      axis.keys = {axis_name};
      for (const auto& v : kv.second) {
        const std::string label = v.first.as<std::string>();
        if (name_part(label) != label)
          r.fail(v.first, "variants." + axis_name + ": label '" + label + "' must use only letters, digits, '.', '_', '+', '-'");
        axis.points.push_back({label});
        axis.variant_sets.push_back(read_set(r, v.second, "variants." + axis_name + "." + label));
      }
      spec.axes.push_back(std::move(axis));
    }
  }
};

// Reads the axes in the order their sections appear in the file; returns the swept keys.
std::set<std::string> read_axes(const Reader& r, const YAML::Node& doc, SweepSpec& spec) {
  AxisReader axes{r, spec, {}};
  for (const auto& kv : doc) {
    const std::string section = kv.first.as<std::string>();
    if (section == "grid") axes.grid(kv.second);
    if (section == "zip") axes.zip(kv.second);
    if (section == "variants") axes.variants(kv.second);
  }
  if (spec.axes.empty()) throw ConfigError(r.file + ": nothing to sweep: give grid:, zip: and/or variants:");
  // A variant may not set a key another axis sweeps (which one would win?).
  for (const auto& axis : spec.axes)
    for (size_t i = 0; i < axis.variant_sets.size(); ++i)
      for (const auto& [k, value] : axis.variant_sets[i])
        if (axes.swept.count(k))
          throw ConfigError(r.file + ": variants." + axis.keys.front() + "." + axis.points[i].front() + ": '" + k +
                            "' is swept by grid or zip");
  return std::move(axes.swept);
}

// Axis values by key, for checking `when` and `report`.
using AxisOf = std::map<std::string, const Axis*>;

// One `when` condition of an override: a swept key and values that occur on its axis.
std::pair<std::string, std::vector<std::string>> read_when(const Reader& r, const YAML::Node& key,
                                                           const YAML::Node& value, const std::set<std::string>& swept,
                                                           const AxisOf& axis_of) {
  const std::string k = key.as<std::string>();
  if (!swept.count(k)) r.fail(key, "overrides: when: '" + k + "' is not a swept key");
  std::vector<std::string> values;
  if (value.IsSequence())
    for (const auto& v : value) values.push_back(value_text(v));
  else
    values.push_back(value_text(value));
  // Every value must occur on the key's axis: a typo would silently match nothing.
  const Axis& axis = *axis_of.at(k);
  const size_t column = size_t(std::find(axis.keys.begin(), axis.keys.end(), k) - axis.keys.begin());
  for (const auto& v : values) {
    const bool found = std::any_of(axis.points.begin(), axis.points.end(),
                                   [&](const auto& point) { return same_value(point[column], v); });
    if (!found) r.fail(value, "overrides: when: " + k + " is never '" + v + "' in this sweep");
  }
  return {k, values};
}

void read_overrides(const Reader& r, const YAML::Node& ov, const std::set<std::string>& swept, const AxisOf& axis_of,
                    SweepSpec& spec) {
  if (!ov.IsSequence()) r.fail(ov, "overrides: expected a list of {when: {key: value(s)}, set: {key: value}}");
  for (const auto& item : ov) {
    if (!item.IsMap() || !item["when"] || !item["set"] || item.size() != 2)
      r.fail(item, "overrides: each entry is {when: {key: value or [values]}, set: {key: value, ...}}");
    ConditionalSet c;
    if (!item["when"].IsMap() || item["when"].size() == 0)
      r.fail(item["when"], "overrides: when: expected a mapping of swept keys to a value or a list of values");
    for (const auto& kv : item["when"]) c.when.push_back(read_when(r, kv.first, kv.second, swept, axis_of));
    c.set = read_set(r, item["set"], "overrides: set");
    for (const auto& [k, v] : c.set)
      if (swept.count(k)) r.fail(item["set"], "overrides: set: '" + k + "' is swept; an override cannot change it");
    spec.overrides.push_back(std::move(c));
  }
}

// report.gap: {baseline: V, target: V}, two distinct values of report.series.
void read_gap(const Reader& r, const YAML::Node& gap, const AxisOf& axis_of, ReportSpec& report) {
  const std::string expected = "report.gap: expected {baseline: VALUE, target: VALUE}, two values of report.series";
  if (!gap.IsMap() || gap.size() != 2 || !gap["baseline"] || !gap["target"] || !gap["baseline"].IsScalar() ||
      !gap["target"].IsScalar())
    r.fail(gap, expected);
  if (report.series.empty()) r.fail(gap, "report.gap needs report.series (the key whose values it names)");
  const Axis& axis = *axis_of.at(report.series);
  // The axis's own spelling, so that the report matches it exactly.
  auto on_axis = [&](const YAML::Node& node, const std::string& role) {
    const std::string v = value_text(node);
    for (const auto& point : axis.points)
      if (same_value(point.front(), v)) return point.front();
    std::string values;
    for (const auto& point : axis.points) values += (values.empty() ? "" : ", ") + point.front();
    r.fail(node, "report.gap." + role + ": " + report.series + " is never '" + v + "' in this sweep (its values: " +
                     values + ")");
    return std::string();
  };
  report.gap_baseline = on_axis(gap["baseline"], "baseline");
  report.gap_target = on_axis(gap["target"], "target");
  if (report.gap_baseline == report.gap_target)
    r.fail(gap, "report.gap: baseline and target are the same value '" + report.gap_target + "'");
}

void read_report(const Reader& r, const YAML::Node& rep, const std::set<std::string>& swept, const AxisOf& axis_of,
                 SweepSpec& spec) {
  if (!rep.IsMap()) r.fail(rep, "report: expected {metric: ..., x: KEY, series: KEY, gap: {baseline: V, target: V}}");
  YAML::Node gap;
  bool has_gap = false;
  for (const auto& kv : rep) {
    const std::string k = kv.first.as<std::string>();
    if (k == "gap") {
      gap = kv.second;
      has_gap = true;
      continue;
    }
    if (!kv.second.IsScalar()) r.fail(kv.second, "report." + k + ": expected a single value");
    const std::string v = kv.second.as<std::string>();
    if (k == "metric") {
      const std::string problem = report_metric_problem(v);
      if (!problem.empty()) r.fail(kv.second, "report.metric: " + problem);
      spec.report.metric = v;
    } else if (k == "x" || k == "series") {
      if (!swept.count(v)) r.fail(kv.second, "report." + k + ": '" + v + "' is not a swept key");
      if (axis_of.at(v)->keys.front() != v)
        r.fail(kv.second, "report." + k + ": '" + v + "' varies with '" + axis_of.at(v)->keys.front() +
                              "' in a zip group; name the group's first key");
      if (is_replicate_key(v)) r.fail(kv.second, "report." + k + ": '" + v + "' is a seed; the report averages over seeds");
      (k == "x" ? spec.report.x : spec.report.series) = v;
    } else if (k == "converged_delta") {
      double d = 0.0;
      if (!parse_number(v, &d) || !(d >= 0 && d < 1))
        r.fail(kv.second, "report.converged_delta: expected an accuracy change in [0, 1) (0.003 = 0.3 points), got '" + v + "'");
      spec.report.converged_delta = d;
    } else {
      r.fail(kv.first, "report: unknown key '" + k + "'; expected metric, x, series, gap, converged_delta");
    }
  }
  if (!spec.report.x.empty() && spec.report.x == spec.report.series)
    throw ConfigError(r.file + ": report.x and report.series name the same key");
  if (has_gap) read_gap(r, gap, axis_of, spec.report);
}

// A positive integer scalar, or a ConfigError naming the line.
int read_count(const Reader& r, const YAML::Node& n, const std::string& what, int min) {
  int v = 0;
  if (!n.IsScalar() || !YAML::convert<int>::decode(n, v) || v < min)
    r.fail(n, what + ": expected an integer >= " + std::to_string(min) + ", got '" + value_text(n) + "'");
  return v;
}

// A list of dotted keys (a single key is a list of one).
std::vector<std::string> read_keys(const Reader& r, const YAML::Node& n, const std::string& what) {
  std::vector<std::string> keys;
  if (n.IsScalar()) {
    check_key(r, n);
    return {n.as<std::string>()};
  }
  if (!n.IsSequence()) r.fail(n, what + ": expected a key or a list of keys");
  for (const auto& k : n) {
    if (!k.IsScalar()) r.fail(k, what + ": expected a key or a list of keys");
    if (std::find(keys.begin(), keys.end(), k.as<std::string>()) != keys.end())
      r.fail(k, what + ": '" + k.as<std::string>() + "' is listed twice");
    keys.push_back(k.as<std::string>());
  }
  return keys;
}

// tune: {params: {KEY: [values] | {times: [factors]}}, metric, per, eta, rungs, extend, budget, set}.
void read_tune(const Reader& r, const YAML::Node& node, const std::set<std::string>& swept, const AxisOf& axis_of,
               SweepSpec& spec) {
  TuneSpec& t = spec.tune;
  if (!node.IsMap()) r.fail(node, "tune: expected {params: {KEY: [values]}, metric: best.val_acc, ...}");
  if (!node["params"]) r.fail(node, "tune: missing 'params' (the candidate values, e.g. {optim.lr: [3.0e-4, 1.0e-3]})");
  auto not_swept = [&](const YAML::Node& key, const std::string& what) {
    const std::string k = key.as<std::string>();
    if (swept.count(k)) r.fail(key, what + ": '" + k + "' is swept; a key is either swept or tuned");
  };
  for (const auto& kv : node) {
    const std::string k = kv.first.as<std::string>();
    const YAML::Node v = kv.second;
    if (k == "params") {
      if (!v.IsMap() || v.size() == 0) r.fail(v, "tune.params: expected a mapping of keys to lists of candidate values");
      for (const auto& p : v) {
        TuneParam param;
        param.key = p.first.as<std::string>();
        if (p.second.IsMap() && p.second["variants"]) {
          // A categorical param of named override sets, e.g. a regularisation level.
          const std::string what = "tune.params." + param.key;
          if (!is_plain_word(param.key))
            r.fail(p.first, what + ": a param of variants is named by a plain word (no dots), e.g. regularisation");
          not_swept(p.first, "tune.params");
          if (p.second.size() != 1 || !p.second["variants"].IsMap() || p.second["variants"].size() < 2)
            r.fail(p.second, what + ": expected {variants: {LABEL: {dotted.key: value, ...}, ...}} with two or more labels");
          for (const auto& kv : p.second["variants"]) {
            const std::string label = kv.first.as<std::string>();
            if (label.empty() || name_part(label) != label)
              r.fail(kv.first, what + ": label '" + label + "' must use only letters, digits, '.', '_', '+', '-'");
            param.values.push_back(label);
            param.variant_sets.push_back(read_set(r, kv.second, what + ".variants." + label));
            for (const auto& [key, value] : param.variant_sets.back())
              if (swept.count(key)) r.fail(kv.second, what + ".variants." + label + ": '" + key + "' is swept; a key is either swept or tuned");
          }
          t.params.push_back(std::move(param));
          continue;
        }
        check_key(r, p.first);
        not_swept(p.first, "tune.params");
        if (p.second.IsMap()) {
          if (p.second.size() != 1 || !p.second["times"] || !p.second["times"].IsSequence() || p.second["times"].size() == 0)
            r.fail(p.second, "tune.params." + param.key + ": expected a list of values, {times: [factors]} or {variants: {...}}");
          for (const auto& f : p.second["times"]) {
            double x = 0.0;
            if (!parse_number(value_text(f), &x) || !(x > 0))
              r.fail(f, "tune.params." + param.key + ".times: expected positive numbers, got '" + value_text(f) + "'");
            if (std::find(param.times.begin(), param.times.end(), x) != param.times.end())
              r.fail(f, "tune.params." + param.key + ".times: factor '" + value_text(f) + "' is listed twice");
            param.times.push_back(x);
          }
        } else {
          param.values = read_values(r, p.first, p.second, "tune.params");
        }
        t.params.push_back(std::move(param));
      }
    } else if (k == "metric") {
      const std::string m = value_text(v);
      const std::string leaf = m.substr(m.find('.') + 1);
      const bool ok = (m.rfind("final.", 0) == 0 || m.rfind("best.", 0) == 0) && leaf.find("val_") != std::string::npos &&
                      leaf.size() > 4 && leaf.compare(leaf.size() - 4, 4, "_acc") == 0;
      if (!ok)
        r.fail(v, "tune.metric: expected a validation accuracy from summary.json (best.val_acc, final.val_acc, "
                  "final.ema_val_acc, ...), got '" + m + "'; the test set is never used for choosing");
      t.metric = m;
    } else if (k == "per") {
      t.per = read_keys(r, v, "tune.per");
      for (const auto& key : t.per) {
        if (!swept.count(key)) r.fail(v, "tune.per: '" + key + "' is not a swept key");
        if (axis_of.at(key)->keys.front() != key)
          r.fail(v, "tune.per: '" + key + "' varies with '" + axis_of.at(key)->keys.front() +
                        "' in a zip group; name the group's first key");
        if (is_replicate_key(key)) r.fail(v, "tune.per: '" + key + "' is a seed; all seeds of a cell share its choice");
      }
    } else if (k == "eta") {
      t.eta = read_count(r, v, "tune.eta", 2);
    } else if (k == "rungs") {
      t.rungs = read_count(r, v, "tune.rungs", 1);
    } else if (k == "extend") {
      t.extend = read_count(r, v, "tune.extend", 0);
    } else if (k == "budget") {
      t.budget = read_keys(r, v, "tune.budget");
      for (const auto& key : t.budget)
        if (swept.count(key)) r.fail(v, "tune.budget: '" + key + "' is swept; the budget keys are scaled per rung");
    } else if (k == "set") {
      t.set = read_set(r, v, "tune.set");
      for (const auto& [key, value] : t.set)
        if (swept.count(key)) r.fail(v, "tune.set: '" + key + "' is swept");
    } else {
      r.fail(kv.first, "tune: unknown key '" + k + "'; expected params, metric, per, eta, rungs, extend, budget, set");
    }
  }
  if (!node["per"])
    for (const auto& axis : spec.axes)
      if (!is_replicate_key(axis.keys.front())) t.per.push_back(axis.keys.front());
  if (t.candidates() < 2) r.fail(node["params"], "tune.params: one candidate only; give at least two values to choose from");
  const int most = halving_rungs(int(t.candidates()), t.eta);
  if (t.rungs > most)
    r.fail(node["rungs"], fmt::format("tune.rungs: {} candidates with eta {} are down to one after {} rung(s); "
                                      "rungs: {} would run a rung with nothing to choose",
                                      t.candidates(), t.eta, most, t.rungs));
  if (t.rungs == 0) t.rungs = most;
}

SweepSpec parse(const fs::path& file, const YAML::Node& doc) {
  const Reader r{file.string()};
  if (!doc.IsMap()) throw ConfigError(file.string() + ": a sweep file is a mapping with base, grid, ... (see README)");
  check_top_keys(r, doc);
  SweepSpec spec;
  spec.file = file;
  read_name_and_limit(r, file, doc, spec);
  read_base(r, file, doc, spec);
  if (doc["set"]) spec.set = read_set(r, doc["set"], "set");
  const std::set<std::string> swept = read_axes(r, doc, spec);
  AxisOf axis_of;
  for (const auto& axis : spec.axes)
    for (const auto& k : axis.keys) axis_of[k] = &axis;
  if (const YAML::Node ov = doc["overrides"]) read_overrides(r, ov, swept, axis_of, spec);
  if (const YAML::Node rep = doc["report"]) read_report(r, rep, swept, axis_of, spec);
  if (const YAML::Node tune = doc["tune"]) read_tune(r, tune, swept, axis_of, spec);
  return spec;
}

}  // namespace

SweepSpec load_sweep(const fs::path& file) {
  if (!fs::exists(file)) throw ConfigError(file.string() + ": sweep file not found");
  const YAML::Node doc = read_yaml_file(file, "sweep file");
  try {
    return parse(file, doc);
  } catch (const YAML::Exception& e) {
    // Syntax errors, and values of the wrong kind (e.g. a list where a name belongs).
    const std::string where = e.mark.is_null() ? file.string() : file.string() + ":" + std::to_string(e.mark.line + 1);
    throw ConfigError(where + ": " + (dynamic_cast<const YAML::ParserException*>(&e) ? "YAML syntax error: " : "") + e.msg);
  }
}

size_t TuneSpec::candidates() const {
  size_t n = params.empty() ? 0 : 1;
  for (const auto& p : params) n *= p.size();
  return n;
}

std::string cell_name(const SweepSpec& spec, const PlannedRun& run) {
  if (!spec.tune.enabled()) return "";
  std::map<std::string, int> last_count;
  for (const auto& key : spec.tune.per) ++last_count[last_component(key)];
  std::string name;
  for (const auto& key : spec.tune.per)
    for (const auto& [k, v] : run.swept)
      if (k == key)
        name += (name.empty() ? "" : ",") + (last_count[last_component(k)] > 1 ? k : last_component(k)) + "=" + name_part(v);
  return name.empty() ? "all" : name;
}

std::vector<std::string> swept_keys(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& a : spec.axes) keys.insert(keys.end(), a.keys.begin(), a.keys.end());
  return keys;
}

std::vector<PlannedRun> expand(const SweepSpec& spec) {
  // Name each run by the first key of every axis (zip partners follow it), by the key's
  // last component unless two axes share it.
  std::map<std::string, int> last_count;
  for (const auto& a : spec.axes) ++last_count[last_component(a.keys.front())];
  std::vector<std::string> label;
  for (const auto& a : spec.axes) {
    const std::string& k = a.keys.front();
    label.push_back(last_count[last_component(k)] > 1 ? k : last_component(k));
  }

  // Counted before any run is made: a few lines of grid can ask for millions.
  uint64_t count = 1;
  for (const auto& a : spec.axes) {
    count *= std::max<size_t>(a.points.size(), 1);
    if (count > uint64_t(spec.max_runs))
      throw ConfigError(spec.file.string() + ": the grid has more than " + std::to_string(spec.max_runs) +
                        " runs (max_runs); raise max_runs in the sweep file if that many are meant");
  }
  std::vector<PlannedRun> runs;
  std::vector<size_t> index(spec.axes.size(), 0);
  std::map<std::string, size_t> names;
  while (true) {
    PlannedRun run;
    for (const auto& [k, v] : spec.set) run.overrides.push_back(k + "=" + v);
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      const auto& axis = spec.axes[a];
      const auto& point = axis.points[index[a]];
      run.name += (a ? "," : "") + label[a] + "=" + name_part(point.front());
      if (!axis.variant_sets.empty()) {
        run.swept.emplace_back(axis.keys.front(), point.front());
        for (const auto& [k, v] : axis.variant_sets[index[a]]) run.overrides.push_back(k + "=" + v);
        continue;
      }
      for (size_t k = 0; k < axis.keys.size(); ++k) {
        run.swept.emplace_back(axis.keys[k], point[k]);
        run.overrides.push_back(axis.keys[k] + "=" + point[k]);
      }
    }
    for (const auto& c : spec.overrides) {
      const bool match = std::all_of(c.when.begin(), c.when.end(), [&](const auto& cond) {
        for (const auto& [k, v] : run.swept)
          if (k == cond.first)
            return std::any_of(cond.second.begin(), cond.second.end(), [&](const std::string& want) { return same_value(v, want); });
        return false;
      });
      if (match)
        for (const auto& [k, v] : c.set) run.overrides.push_back(k + "=" + v);
    }
    run.overrides.push_back("name=" + run.name);
    run.cell = cell_name(spec, run);
    if (!names.emplace(run.name, runs.size()).second)
      throw ConfigError(spec.file.string() + ": two runs would share the directory name '" + run.name +
                        "' (values that differ only in characters a file name cannot hold); rename a value");
    runs.push_back(std::move(run));
    // Odometer: the last axis varies fastest.
    size_t a = spec.axes.size();
    while (a > 0) {
      --a;
      if (++index[a] < spec.axes[a].points.size()) break;
      index[a] = 0;
      if (a == 0) return runs;
    }
  }
}

}  // namespace biaslab::sweep
