// read_plan: a sweep directory's plan.json, checked field by field. The file is written by
// `biaslab sweep`, but its report section is the documented place to change how a finished
// study is reported, so every field `report` and `compare` use is checked here once: a
// wrong type, a missing or unknown key, a report key that is not an axis, a gap value the
// series never takes. Each refusal is a CheckpointError (exit 5) naming the file, the
// field and what was expected; nothing downstream indexes with an unchecked value.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "config/suggest.h"
#include "core/errors.h"
#include "core/fs.h"
#include "sweep/plan.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace biaslab::sweep {
namespace {

class StoredPlan {
 public:
  explicit StoredPlan(fs::path file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw CheckpointError(file_.string() + ": " + field + ": " + what +
                          " (plan.json is written by `biaslab sweep`; its report section may be edited by hand: "
                          "see docs/sweeps.md, \"Reports\")");
  }

  // The members of `obj` (at `field`), each one of `allowed`; `required` must all be there.
  void members(const json& obj, const std::string& field, const std::vector<std::string>& allowed,
               const std::vector<std::string>& required) const {
    if (!obj.is_object()) fail(field, "expected an object with " + join(allowed));
    for (const auto& [k, v] : obj.items())
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        fail(at(field, k), "unknown key" + did_you_mean(k, allowed) + "; expected " + join(allowed));
    for (const auto& k : required)
      if (!obj.contains(k)) fail(at(field, k), "missing");
  }

  std::string text(const json& j, const std::string& field) const {
    if (!j.is_string()) fail(field, "expected a string, got " + shown(j));
    return j.get<std::string>();
  }

  std::vector<std::string> texts(const json& j, const std::string& field) const {
    if (!j.is_array()) fail(field, "expected a list of strings, got " + shown(j));
    std::vector<std::string> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(text(j[i], item(field, i)));
    return out;
  }

  static std::string at(const std::string& field, const std::string& key) {
    return field.empty() ? key : field + "." + key;
  }
  static std::string item(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }
  const fs::path& file() const { return file_; }

 private:
  static std::string shown(const json& j) {
    std::string s = j.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
  }
  fs::path file_;
};

std::vector<PlannedRun> stored_runs(const StoredPlan& p, const json& runs, const std::vector<std::string>& keys) {
  if (!runs.is_array()) p.fail("runs", "expected a list of runs");
  std::vector<PlannedRun> out;
  std::set<std::string> names;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string field = StoredPlan::item("runs", i);
    const json& r = runs[i];
    p.members(r, field, {"name", "swept", "overrides", "cell"}, {"name", "swept", "overrides"});
    PlannedRun run;
    run.name = p.text(r.at("name"), field + ".name");
    // The name is a directory under runs/, configs/ and logs/.
    if (run.name.empty() || run.name == "." || run.name == ".." || run.name.find('/') != std::string::npos)
      p.fail(field + ".name", "'" + run.name + "' is not a run directory name (non-empty, no '/', not '.' or '..')");
    if (!names.insert(run.name).second) p.fail(field + ".name", "'" + run.name + "' is listed twice");
    const json& swept = r.at("swept");
    if (!swept.is_array() || swept.size() != keys.size())
      p.fail(field + ".swept", "expected one [key, value] pair per swept key (" + join(keys) + ")");
    for (size_t k = 0; k < keys.size(); ++k) {
      const std::vector<std::string> pair = p.texts(swept[k], StoredPlan::item(field + ".swept", k));
      if (pair.size() != 2 || pair[0] != keys[k])
        p.fail(StoredPlan::item(field + ".swept", k), "expected [\"" + keys[k] + "\", VALUE]");
      run.swept.emplace_back(pair[0], pair[1]);
    }
    run.overrides = p.texts(r.at("overrides"), field + ".overrides");
    if (r.contains("cell")) run.cell = p.text(r.at("cell"), field + ".cell");
    out.push_back(std::move(run));
  }
  return out;
}

// The tune section as `biaslab report` reads it (sweep/report_tuning.cpp); kept as JSON text.
void stored_tune(const StoredPlan& p, const json& t) {
  p.members(t, "tune", {"params", "metric", "per", "eta", "rungs", "extend", "budget", "set"},
            {"params", "metric", "per", "eta"});
  if (!t.at("params").is_array() || t.at("params").empty()) p.fail("tune.params", "expected a non-empty list");
  for (size_t i = 0; i < t.at("params").size(); ++i) {
    const std::string field = StoredPlan::item("tune.params", i);
    const json& param = t.at("params")[i];
    p.members(param, field, {"key", "values", "times", "variants"}, {"key"});
    p.text(param.at("key"), field + ".key");
    if (param.contains("times") == param.contains("values")) p.fail(field, "expected either values or times");
    if (param.contains("variants")) {
      const json& sets = param.at("variants");
      const bool pairs = sets.is_array() && std::all_of(sets.begin(), sets.end(), [](const json& set) {
        return set.is_array() && std::all_of(set.begin(), set.end(), [](const json& kv) {
          return kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_string();
        });
      });
      if (!pairs || !param.contains("values") || !param.at("values").is_array() || sets.size() != param.at("values").size())
        p.fail(field + ".variants", "expected one list of [key, value] pairs per label in values");
    }
    if (param.contains("values")) {
      if (p.texts(param.at("values"), field + ".values").empty()) p.fail(field + ".values", "expected values");
    } else {
      const json& times = param.at("times");
      if (!times.is_array() || times.empty() ||
          !std::all_of(times.begin(), times.end(), [](const json& f) { return f.is_number(); }))
        p.fail(field + ".times", "expected a non-empty list of numbers");
    }
  }
  p.text(t.at("metric"), "tune.metric");
  p.texts(t.at("per"), "tune.per");
  if (!t.at("eta").is_number_integer() || t.at("eta").get<int64_t>() < 2) p.fail("tune.eta", "expected an integer >= 2");
  if (t.contains("extend") && (!t.at("extend").is_number_integer() || t.at("extend").get<int64_t>() < 0))
    p.fail("tune.extend", "expected an integer >= 0");
}

// report: {metric, x, series[, gap]} against the plan's axes and its runs' values.
ReportSpec stored_report(const StoredPlan& p, const json& r, const Plan& plan) {
  p.members(r, "report", {"metric", "x", "series", "gap", "converged_delta"}, {"metric", "x", "series"});
  ReportSpec report;
  if (r.contains("converged_delta")) {
    const json& d = r.at("converged_delta");
    if (!d.is_number() || !(d.get<double>() >= 0 && d.get<double>() < 1))
      p.fail("report.converged_delta", "expected a number in [0, 1) (0.003 = 0.3 points)");
    report.converged_delta = d.get<double>();
  }
  report.metric = p.text(r.at("metric"), "report.metric");
  const std::string problem = report_metric_problem(report.metric);
  if (!problem.empty()) p.fail("report.metric", problem);
  for (const std::string role : {"x", "series"}) {
    const std::string key = p.text(r.at(role), "report." + role);
    if (key.empty()) continue;
    const bool axis = std::find(plan.axes.begin(), plan.axes.end(), key) != plan.axes.end();
    if (!axis && std::find(plan.keys.begin(), plan.keys.end(), key) != plan.keys.end())
      p.fail("report." + role, "'" + key + "' varies with another key in a zip group; name the group's first key (axes: " +
                                   join(plan.axes) + ")");
    if (!axis)
      p.fail("report." + role, "'" + key + "' is not an axis of this sweep" + did_you_mean(key, plan.axes) +
                                   "; expected \"\" or one of: " + join(plan.axes));
    if (is_replicate_key(key)) {
      spdlog::warn("{}: report.{}: '{}' is a seed; the report averages over seeds and ignores it", p.file().string(),
                   role, key);
      continue;
    }
    (role == "x" ? report.x : report.series) = key;
  }
  if (!report.x.empty() && report.x == report.series)
    p.fail("report.series", "'" + report.x + "' is also report.x; expected another axis");
  if (!r.contains("gap")) return report;
  p.members(r.at("gap"), "report.gap", {"baseline", "target"}, {"baseline", "target"});
  report.gap_baseline = p.text(r.at("gap").at("baseline"), "report.gap.baseline");
  report.gap_target = p.text(r.at("gap").at("target"), "report.gap.target");
  if (report.series.empty()) p.fail("report.gap", "needs report.series (the axis whose values it names)");
  const size_t column = size_t(std::find(plan.keys.begin(), plan.keys.end(), report.series) - plan.keys.begin());
  std::vector<std::string> values;
  for (const auto& run : plan.runs)
    if (std::find(values.begin(), values.end(), run.swept[column].second) == values.end())
      values.push_back(run.swept[column].second);
  for (const auto& [role, v] : {std::pair{"baseline", report.gap_baseline}, std::pair{"target", report.gap_target}})
    if (std::find(values.begin(), values.end(), v) == values.end())
      p.fail(std::string("report.gap.") + role,
             report.series + " is never '" + v + "' in this sweep; expected one of: " + join(values));
  if (report.gap_baseline == report.gap_target)
    p.fail("report.gap", "baseline and target are the same value '" + report.gap_target + "'");
  return report;
}

}  // namespace

Plan read_plan(const fs::path& sweep_dir) {
  const fs::path file = sweep_dir / "plan.json";
  if (!fs::exists(file))
    throw CheckpointError(sweep_dir.string() + ": no plan.json (is this a directory made by `biaslab sweep`?)");
  json j;
  try {
    j = json::parse(read_file(file));
  } catch (const json::exception& e) {
    throw CheckpointError(file.string() + ": unreadable sweep plan (truncated or not JSON): " + e.what());
  }
  const StoredPlan p(file);
  p.members(j, "", {"name", "keys", "axes", "report", "runs", "tune"}, {"name", "keys", "axes", "report", "runs"});
  Plan plan;
  plan.name = p.text(j.at("name"), "name");
  plan.keys = p.texts(j.at("keys"), "keys");
  if (std::set<std::string>(plan.keys.begin(), plan.keys.end()).size() != plan.keys.size())
    p.fail("keys", "a key is listed twice");
  plan.axes = p.texts(j.at("axes"), "axes");
  for (size_t i = 0; i < plan.axes.size(); ++i)
    if (std::find(plan.keys.begin(), plan.keys.end(), plan.axes[i]) == plan.keys.end() ||
        std::count(plan.axes.begin(), plan.axes.end(), plan.axes[i]) > 1)
      p.fail(StoredPlan::item("axes", i), "'" + plan.axes[i] + "' is not a swept key listed once; expected one of: " +
                                              join(plan.keys));
  if (j.contains("tune")) {
    stored_tune(p, j.at("tune"));
    // A plan from before tune.extend tuned without extending its grids: extend 0.
    json tune = j.at("tune");
    if (!tune.contains("extend")) tune["extend"] = 0;
    plan.tune = tune.dump();
  }
  plan.runs = stored_runs(p, j.at("runs"), plan.keys);
  plan.report = stored_report(p, j.at("report"), plan);
  return plan;
}

}  // namespace biaslab::sweep
