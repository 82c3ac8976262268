#include "sweep/plan.h"

#include <nlohmann/json.hpp>

#include "config/loader.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/input_file.h"
#include "core/output_folder.h"
#include "core/text_diff.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace biaslab::sweep {
namespace {

json plan_json(const Plan& plan) {
  json runs = json::array();
  for (const auto& r : plan.runs) {
    json swept = json::array();
    for (const auto& [k, v] : r.swept) swept.push_back({k, v});
    json run = {{"name", r.name}, {"swept", swept}, {"overrides", r.overrides}};
    if (!r.cell.empty()) run["cell"] = r.cell;
    runs.push_back(run);
  }
  json report = {{"metric", plan.report.metric}, {"x", plan.report.x}, {"series", plan.report.series}};
  if (plan.report.converged_delta != ReportSpec{}.converged_delta) report["converged_delta"] = plan.report.converged_delta;
  if (!plan.report.gap_target.empty())
    report["gap"] = {{"baseline", plan.report.gap_baseline}, {"target", plan.report.gap_target}};
  json out = {{"name", plan.name}, {"keys", plan.keys}, {"axes", plan.axes}, {"report", report}, {"runs", runs}};
  if (!plan.tune.empty()) out["tune"] = json::parse(plan.tune);
  return out;
}

std::string first_difference(const std::string& a, const std::string& b) {
  const LineDifference d = first_line_difference(a, b);
  return d.found ? "was '" + d.a + "', now '" + d.b + "'" : "";
}


// The tune settings that decide the tuning runs and the choice, for plan.json.
std::string tune_json(const TuneSpec& t) {
  if (!t.enabled()) return "";
  json params = json::array();
  for (const auto& p : t.params) {
    json param = p.times.empty() ? json{{"key", p.key}, {"values", p.values}} : json{{"key", p.key}, {"times", p.times}};
    if (!p.variant_sets.empty()) {
      json sets = json::array();
      for (const auto& set : p.variant_sets) {
        json pairs = json::array();
        for (const auto& [k, v] : set) pairs.push_back({k, v});
        sets.push_back(pairs);
      }
      param["variants"] = sets;
    }
    params.push_back(param);
  }
  json set = json::array();
  for (const auto& [k, v] : t.set) set.push_back({k, v});
  return json{{"params", params}, {"metric", t.metric}, {"per", t.per}, {"eta", t.eta},
              {"rungs", t.rungs}, {"extend", t.extend}, {"budget", t.budget}, {"set", set}}.dump();
}

}  // namespace

Plan make_plan(const SweepSpec& spec) {
  Plan plan{spec.name, tune_json(spec.tune), swept_keys(spec), {}, spec.report, expand(spec)};
  for (const auto& a : spec.axes) plan.axes.push_back(a.keys.front());
  return plan;
}

const std::string& ResolvedRun::at(const std::string& key) const {
  for (const auto& [k, v] : values)
    if (k == key) return v;
  throw ConfigError("'" + key + "' is not a config key");
}

ResolvedRun resolve_run(const SweepSpec& spec, const std::string& run, const std::vector<std::string>& overrides) {
  try {
    const Config cfg = spec.base_file.empty() ? load_config_text(spec.base_yaml, spec.base_source, overrides)
                                              : load_config(spec.base_file.string(), overrides);
    return {to_yaml(cfg), config_values(cfg)};
  } catch (const ConfigError& e) {
    throw ConfigError(spec.file.string() + ": run '" + run + "': " + e.what());
  }
}

std::vector<std::string> resolve_configs(const SweepSpec& spec, const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& run : plan.runs) out.push_back(resolve_run(spec, run.name, run.overrides).yaml);
  return out;
}

namespace {
// A stored resolved config as this biaslab writes it: keys added since it was written
// appear with their defaults, so an upgrade does not make every run look changed.
std::string as_current_yaml(const std::string& yaml, const fs::path& file) {
  LoadOptions lo;
  lo.resolve_presets = false;
  try {
    return to_yaml(load_config_text(yaml, file.string(), {}, lo));
  } catch (const ConfigError&) {
    return yaml;  // compared as is: it differs, and the difference is reported
  }
}
}  // namespace

bool stored_config_differs(const fs::path& stored, const std::string& config, std::string* difference) {
  if (!fs::exists(stored)) return false;
  const std::string before = as_current_yaml(read_file(stored), stored);
  if (before == config) return false;
  if (difference) *difference = first_difference(before, config);
  return true;
}

void set_aside(const Layout& layout, const std::string& name) {
  if (!fs::exists(layout.run_dir(name))) return;
  fs::create_directories(layout.root / "discarded");
  fs::path aside = layout.root / "discarded" / name;
  for (int n = 2; fs::exists(aside); ++n) aside = layout.root / "discarded" / (name + "." + std::to_string(n));
  fs::rename(layout.run_dir(name), aside);
}

PlanChanges plan_changes(const Layout& layout, const Plan& plan, const std::vector<std::string>& configs) {
  PlanChanges out;
  if (!fs::exists(layout.plan())) return out;
  const Plan old = read_plan(layout.root);
  std::string& why = out.why;
  if (old.keys != plan.keys) why = "the swept keys differ";
  if (why.empty() && old.tune != plan.tune) why = "the tune settings differ";
  std::set<std::string> old_names;
  for (const auto& r : old.runs) old_names.insert(r.name);
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    const std::string& name = plan.runs[i].name;
    if (!old_names.count(name)) {
      if (why.empty()) why = "run '" + name + "' is new";
      continue;
    }
    if (configs[i].empty()) continue;  // a tuned run whose cell is not decided yet
    const fs::path stored = layout.config(name);
    std::string difference;
    const bool lost = !fs::exists(stored) && fs::exists(layout.run_dir(name));
    if (lost || stored_config_differs(stored, configs[i], &difference)) {
      out.changed.insert(name);
      if (why.empty())
        why = "run '" + name + "' has a different config (" + (lost ? "its stored config is missing" : difference) + ")";
    }
  }
  if (why.empty() && old.runs.size() != plan.runs.size()) why = "runs were removed";
  return out;
}

std::string different_definition(const Layout& layout, const std::string& why) {
  return layout.root.string() + " was created from a different sweep definition: " + why +
         ". Pass --force to adopt the new one (runs whose config changed start over, their old directories moved "
         "to discarded/; the others keep their results), or --out to use another directory";
}

std::set<std::string> prepare(const Layout& layout, const SweepSpec& spec, const Plan& plan,
                              const std::vector<std::string>& configs, bool force) {
  const PlanChanges changes = plan_changes(layout, plan, configs);
  // The report settings touch no run: a change to them alone is adopted (plan.json
  // is rewritten below), so a finished study can be reported another way.
  if (!changes.why.empty() && !force) throw ConfigError(different_definition(layout, changes.why));
  const std::set<std::string>& changed = changes.changed;
  // The marker first: an interrupted first prepare leaves a folder that is still ours.
  if (!fs::exists(layout.marker())) atomic_write(layout.marker(), "a biaslab sweep directory (see plan.json)\n");
  remove_stale_temporaries(layout.root);
  fs::create_directories(layout.root / "configs");
  fs::create_directories(layout.root / "runs");
  fs::create_directories(layout.root / "logs");
  // A run whose config changed starts over; its old directory is kept aside, not deleted.
  for (const auto& name : changed) set_aside(layout, name);
  for (size_t i = 0; i < plan.runs.size(); ++i)
    if (!configs[i].empty()) atomic_write(layout.config(plan.runs[i].name), configs[i]);
  atomic_write(layout.root / "sweep.yaml", read_file(spec.file));
  atomic_write(layout.plan(), plan_json(plan).dump(2) + "\n");
  return changed;
}

void claim_sweep_dir(const Layout& layout) {
  claim_output_folder(layout.root, "sweep directory", "a biaslab sweep directory", [&](const fs::path&) {
    return fs::is_regular_file(layout.plan()) || fs::is_regular_file(layout.marker());
  });
}

}  // namespace biaslab::sweep
