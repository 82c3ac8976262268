#include "sweep/tuner.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/errors.h"
#include "core/fs.h"
#include "sweep/ledger.h"
#include "sweep/values.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace biaslab::sweep {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A dotted path of summary.json ("best.val_acc"), NaN when absent.
double summary_metric(const fs::path& summary, const std::string& dotted) {
  try {
    const json j = json::parse(read_file(summary));
    const json* node = &j;
    std::istringstream parts(dotted);
    std::string part;
    while (std::getline(parts, part, '.')) {
      if (!node->is_object() || !node->contains(part)) return kNaN;
      node = &node->at(part);
    }
    return node->is_number() ? node->get<double>() : kNaN;
  } catch (const json::exception& e) {
    throw CheckpointError(summary.string() + ": unreadable summary (" + e.what() + ")");
  }
}

bool is_integer_text(const std::string& s) {
  return !s.empty() && s.find_first_not_of("-0123456789") == std::string::npos;
}

// factor x value, as the config's type writes it (integers stay integers).
std::string times_text(const std::string& value, double factor) {
  double v = 0.0;
  if (!parse_number(value, &v)) return "";
  if (is_integer_text(value)) return std::to_string(std::llround(v * factor));
  return fmt::format("{:.6g}", v * factor);
}

std::string short_key(const std::vector<TuneParam>& params, const std::string& key) {
  int same = 0;
  for (const auto& p : params) same += last_component(p.key) == last_component(key);
  return same > 1 ? key : last_component(key);
}

// "lr=x0.5,weight_decay=1.0e-4"
std::string candidate_label(const std::vector<TuneParam>& params, const TuneCandidate& c) {
  std::string label;
  for (size_t p = 0; p < params.size(); ++p) {
    if (p) label += ',';
    label += short_key(params, params[p].key) + '=' +
             (params[p].times.empty() ? name_part(c.value[p]) : fmt::format("x{:g}", c.factor[p]));
  }
  return label;
}

// A candidate's number for param p (its factor, or its value), NaN when the value is
// not a number (a categorical param).
double number_of(const TuneParam& param, const TuneCandidate& c, size_t p) {
  if (!param.variant_sets.empty()) return kNaN;  // labels, even numeric ones, name override sets
  if (!param.times.empty()) return c.factor[p];
  double x = 0.0;
  return parse_number(c.value[p], &x) ? x : kNaN;
}

// Whether a numeric grid steps by a ratio (log-spaced) rather than by a difference: its
// values are positive and their consecutive ratios vary no more than their differences.
bool log_spaced(std::vector<double> grid) {
  std::sort(grid.begin(), grid.end());
  if (grid.front() <= 0) return false;
  double rmin = INFINITY, rmax = 0, dmin = INFINITY, dmax = 0;
  for (size_t i = 1; i < grid.size(); ++i) {
    rmin = std::min(rmin, grid[i] / grid[i - 1]);
    rmax = std::max(rmax, grid[i] / grid[i - 1]);
    dmin = std::min(dmin, grid[i] - grid[i - 1]);
    dmax = std::max(dmax, grid[i] - grid[i - 1]);
  }
  return (rmax - rmin) / rmin <= (dmax - dmin) / dmin + 1e-9;
}

}  // namespace

Tuner::Tuner(const SweepSpec& spec, const Plan& plan, const Layout& sweep)
    : spec_(spec), plan_(plan), layout_{sweep.root / "tune"} {
  const TuneSpec& t = spec.tune;
  schedule_ = halving_schedule(int(t.candidates()), t.eta, t.rungs);
  // Candidates: the product of the params, the last varying fastest.
  std::vector<size_t> index(t.params.size(), 0);
  for (size_t n = 0; n < t.candidates(); ++n) {
    TuneCandidate c;
    for (size_t p = 0; p < t.params.size(); ++p) {
      const TuneParam& param = t.params[p];
      c.value.push_back(param.times.empty() ? param.values[index[p]] : "");
      c.factor.push_back(param.times.empty() ? kNaN : param.times[index[p]]);
    }
    c.label = candidate_label(t.params, c);
    candidates_.push_back(std::move(c));
    for (size_t p = t.params.size(); p-- > 0;) {
      if (++index[p] < t.params[p].size()) break;
      index[p] = 0;
    }
  }
  // Cells in plan order; the first run of each is its representative.
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    auto [it, fresh] = by_name.emplace(plan.runs[i].cell, cells_.size());
    if (fresh) {
      TuneCell cell;
      cell.name = plan.runs[i].cell;
      cell.representative = i;
      cell.candidates = candidates_;
      cells_.push_back(std::move(cell));
    }
    cells_[it->second].runs.push_back(i);
  }
  for (const auto& cell : cells_) {
    const PlannedRun& rep = plan.runs[cell.representative];
    std::vector<std::string> overrides = rep.overrides;
    for (const auto& [k, v] : t.set) overrides.push_back(k + "=" + v);
    cell_base_.push_back(resolve_run(spec, rep.name, overrides));
  }
  budget_keys_ = t.budget;
  if (budget_keys_.empty()) {
    // train.steps is "~" (no limit) in a run measured in epochs.
    double steps = 0.0;
    const bool by_steps = parse_number(cell_base_.front().at("train.steps"), &steps) && steps > 0;
    budget_keys_ = {by_steps ? "train.steps" : "train.epochs", "sched.warmup_steps"};
  }
  for (const auto& p : t.params) {
    for (const auto& set : p.variant_sets)
      for (const auto& [key, value] : set)
        if (std::find(budget_keys_.begin(), budget_keys_.end(), key) != budget_keys_.end())
          throw ConfigError(spec.file.string() + ": tune.params." + p.key + ": a variant sets '" + key +
                            "', a budget key (scaled per rung); sweep it in an axis instead, or name other tune.budget keys");
    if (std::find(budget_keys_.begin(), budget_keys_.end(), p.key) != budget_keys_.end())
      throw ConfigError(spec.file.string() + ": tune.params: '" + p.key +
                        "' is a budget key (scaled per rung); tune it in a sweep axis instead, or name other tune.budget keys");
  }
}

int Tuner::extend() const { return spec_.tune.extend; }

std::vector<std::string> Tuner::candidate_overrides(const ResolvedRun& base, const TuneCandidate& candidate) const {
  std::vector<std::string> out;
  const auto& params = spec_.tune.params;
  for (size_t p = 0; p < params.size(); ++p) {
    if (!params[p].variant_sets.empty()) {
      const auto& labels = params[p].values;
      const size_t i = size_t(std::find(labels.begin(), labels.end(), candidate.value[p]) - labels.begin());
      for (const auto& [k, v] : params[p].variant_sets.at(i)) out.push_back(k + "=" + v);
      continue;
    }
    if (params[p].times.empty()) {
      out.push_back(params[p].key + "=" + candidate.value[p]);
      continue;
    }
    const std::string value = base.at(params[p].key);
    const std::string scaled = times_text(value, candidate.factor[p]);
    if (scaled.empty())
      throw ConfigError(spec_.file.string() + ": tune.params." + params[p].key + ": {times: ...} needs a number, but the " +
                        "run's value is '" + value + "'");
    out.push_back(params[p].key + "=" + scaled);
  }
  return out;
}

std::string Tuner::tuning_run_name(const TuneCell& cell, int rung, size_t candidate) const {
  return cell.name + ",rung=" + std::to_string(rung) + "," + cell.candidates[candidate].label;
}

std::vector<std::string> Tuner::tuning_overrides(const TuneCell& cell, int rung, size_t candidate) const {
  const size_t c = size_t(&cell - cells_.data());
  const ResolvedRun& base = cell_base_[c];
  std::vector<std::string> out = plan_.runs[cell.representative].overrides;
  for (const auto& [k, v] : spec_.tune.set) out.push_back(k + "=" + v);
  for (size_t b = 0; b < budget_keys_.size(); ++b) {
    const std::string& key = budget_keys_[b];
    const std::string value = base.at(key);
    if (!is_integer_text(value) || (b == 0 && std::stoll(value) <= 0))
      throw ConfigError(spec_.file.string() + ": tune.budget: '" + key + "' is '" + value + "' in run '" +
                        plan_.runs[cell.representative].name + "'; " +
                        (b == 0 ? "the first budget key is the run's length, a positive count (train.steps or train.epochs)"
                                : "budget keys are counts (steps, epochs)"));
    const long long scaled = std::llround(double(std::stoll(value)) * schedule_[size_t(rung)].share);
    out.push_back(key + "=" + std::to_string(b == 0 ? std::max(1LL, scaled) : scaled));
  }
  for (auto& o : candidate_overrides(base, cell.candidates[candidate])) out.push_back(std::move(o));
  out.push_back("name=" + tuning_run_name(cell, rung, candidate));
  return out;
}

const std::string& Tuner::tuning_config(const TuneCell& cell, int rung, size_t candidate) const {
  const std::string name = tuning_run_name(cell, rung, candidate);
  auto it = config_cache_.find(name);
  if (it == config_cache_.end())
    it = config_cache_.emplace(name, resolve_run(spec_, name, tuning_overrides(cell, rung, candidate)).yaml).first;
  return it->second;
}

void Tuner::check() const {
  for (size_t c = 0; c < cells_.size(); ++c) {
    const TuneCell& cell = cells_[c];
    const std::string& val = cell_base_[c].at("data.val_fraction");
    const std::string& per_class = cell_base_[c].at("data.val_per_class");
    double v = 0.0, k = 0.0;
    const bool has_val = (parse_number(val, &v) && v > 0) || (parse_number(per_class, &k) && k > 0);
    if (!has_val)
      throw ConfigError(spec_.file.string() + ": tune: cell '" + cell.name + "' selects on " + spec_.tune.metric +
                        ", but its runs have no validation split (data.val_fraction is " + val +
                        ", data.val_per_class " + per_class + "); set one in the base config, in set:, or for the "
                        "tuning runs only in tune.set");
    for (size_t k = 0; k < candidates_.size(); ++k) {
      tuning_config(cell, 0, k);
      for (size_t run : cell.runs) {
        const PlannedRun& r = plan_.runs[run];
        const ResolvedRun base = resolve_run(spec_, r.name, r.overrides);
        std::vector<std::string> overrides = r.overrides;
        for (auto& o : candidate_overrides(base, candidates_[k])) overrides.push_back(std::move(o));
        resolve_run(spec_, r.name + "' with candidate '" + candidates_[k].label, overrides);
        if (k > 0) break;  // the others differ only in the tuned values, checked on the first run
      }
    }
  }
}

TuneEntry Tuner::entry_of(const TuneCell& cell, int rung, size_t k, const Ledger& ledger, bool retry_failed) const {
  // A changed config first (it reruns), then a result.
  TuneEntry e;
  e.rung = rung;
  e.candidate = k;
  e.run = tuning_run_name(cell, rung, k);
  e.metric = kNaN;
  const auto it = ledger.entries().find(e.run);
  const bool failed = it != ledger.entries().end() && it->second.state == "failed";
  const fs::path summary = layout_.run_dir(e.run) / "summary.json";
  if (stored_config_differs(layout_.config(e.run), tuning_config(cell, rung, k), nullptr)) {
    e.state = "changed";
  } else if (fs::exists(summary) && fs::exists(layout_.config(e.run))) {
    e.state = "done";
    e.metric = summary_metric(summary, spec_.tune.metric);
  } else if (failed && !(retry_failed && !retried_.count(e.run))) {
    e.state = "failed";
  } else {
    e.state = "pending";
  }
  return e;
}

bool Tuner::extend_beyond_grid(TuneCell& cell, size_t& best, const Ledger& ledger, bool retry_failed) const {
  const auto& params = spec_.tune.params;
  const int last = int(schedule_.size()) - 1;
  double best_metric = kNaN;
  for (const auto& e : cell.entries)
    if (e.rung == last && e.candidate == best) best_metric = e.metric;
  for (size_t p = 0; p < params.size(); ++p) {
    for (int used = 0;; ++used) {
      // The values of p tried so far: the grid's, widened by earlier extensions.
      std::vector<double> tried;
      for (const auto& c : cell.candidates) tried.push_back(number_of(params[p], c, p));
      const double at = number_of(params[p], cell.candidates[best], p);
      if (std::any_of(tried.begin(), tried.end(), [](double x) { return !std::isfinite(x); })) break;  // categorical
      std::sort(tried.begin(), tried.end());
      tried.erase(std::unique(tried.begin(), tried.end()), tried.end());
      if (tried.size() < 2 || (at != tried.front() && at != tried.back())) break;  // inside
      const bool upper = at == tried.back();
      const std::string end = upper ? "upper" : "lower";
      if (used == spec_.tune.extend) {
        cell.edges.push_back({params[p].key, end, fmt::format("tune.extend ({}) used", spec_.tune.extend)});
        break;
      }
      std::vector<double> grid;
      for (const auto& c : candidates_) grid.push_back(number_of(params[p], c, p));
      const double neighbour = upper ? tried[tried.size() - 2] : tried[1];
      double next = log_spaced(grid) ? at * (at / neighbour) : at + (at - neighbour);
      TuneCandidate c = cell.candidates[best];
      if (params[p].times.empty()) {
        const bool integers = std::all_of(params[p].values.begin(), params[p].values.end(), is_integer_text);
        if (integers) next = double(std::llround(next) == std::llround(at) ? std::llround(at) + (upper ? 1 : -1) : std::llround(next));
        c.value[p] = integers ? std::to_string(std::llround(next)) : fmt::format("{:.6g}", next);
      } else {
        c.factor[p] = next;
      }
      c.label = candidate_label(params, c);
      size_t k = 0;
      while (k < cell.candidates.size() && cell.candidates[k].label != c.label) ++k;
      if (k == cell.candidates.size()) {
        cell.candidates.push_back(c);
        try {
          tuning_config(cell, last, k);
        } catch (const ConfigError& e) {
          cell.candidates.pop_back();
          cell.edges.push_back({params[p].key, end, "the next value, " + (params[p].times.empty() ? c.value[p] : fmt::format("x{:g}", next)) +
                                                        ", is not a valid config (" + e.what() + ")"});
          break;
        }
      }
      cell.entries.push_back(entry_of(cell, last, k, ledger, retry_failed));
      TuneEntry& e = cell.entries.back();
      e.extends = params[p].key;
      if (e.state != "done" && e.state != "failed") return false;
      if (!(std::isfinite(e.metric) && (e.metric > best_metric || !std::isfinite(best_metric)))) break;  // inside now
      best = k;
      best_metric = e.metric;
    }
  }
  return true;
}

void Tuner::refresh(bool retry_failed) {
  const Ledger ledger(layout_.ledger());
  for (auto& cell : cells_) {
    cell.candidates = candidates_;
    cell.entries.clear();
    cell.edges.clear();
    cell.chosen = -1;
    cell.failure.clear();
    std::vector<size_t> alive(candidates_.size());
    for (size_t k = 0; k < alive.size(); ++k) alive[k] = k;
    bool waiting = false;
    for (cell.rung = 0; cell.rung < int(schedule_.size()); ++cell.rung) {
      std::vector<double> metrics;
      for (size_t k : alive) {
        cell.entries.push_back(entry_of(cell, cell.rung, k, ledger, retry_failed));
        const TuneEntry& e = cell.entries.back();
        waiting = waiting || (e.state != "done" && e.state != "failed");
        metrics.push_back(e.metric);
      }
      if (waiting) break;
      if (std::none_of(metrics.begin(), metrics.end(), [](double m) { return std::isfinite(m); })) {
        cell.failure = fmt::format("tuning failed: every candidate of rung {} failed (logs in {})", cell.rung,
                                   (layout_.root / "logs").string());
        break;
      }
      // The best go on; a failed candidate never does.
      const size_t finite = size_t(std::count_if(metrics.begin(), metrics.end(), [](double m) { return std::isfinite(m); }));
      std::vector<size_t> next;
      for (size_t i : best_of(metrics, std::min(finite, size_t(schedule_[size_t(cell.rung)].keep)))) next.push_back(alive[i]);
      alive = next;
    }
    if (waiting || !cell.failure.empty()) continue;
    size_t best = alive.front();
    if (extend_beyond_grid(cell, best, ledger, retry_failed))
      cell.chosen = int(best);
    else
      cell.rung = int(schedule_.size()) - 1;  // an extension of the last rung is pending
  }
}

std::vector<std::string> Tuner::changed_runs() const {
  std::vector<std::string> out;
  for (const auto& cell : cells_)
    for (const auto& e : cell.entries)
      if (e.state == "changed") out.push_back(e.run);
  return out;
}

Plan Tuner::pending_plan() const {
  Plan pending{plan_.name + "/tune", "", plan_.keys, plan_.axes, plan_.report, {}};
  for (const auto& cell : cells_) {
    if (!cell.open()) continue;
    for (const auto& e : cell.entries) {
      if (e.rung != cell.rung || e.state == "done" || e.state == "failed") continue;
      PlannedRun run = plan_.runs[cell.representative];
      run.name = e.run;
      run.overrides = tuning_overrides(cell, e.rung, e.candidate);
      run.cell = cell.name;
      pending.runs.push_back(std::move(run));
    }
  }
  return pending;
}

std::vector<std::string> Tuner::pending_configs(const Plan& pending) const {
  std::vector<std::string> out;
  for (const auto& run : pending.runs) {
    const auto it = config_cache_.find(run.name);
    out.push_back(it != config_cache_.end() ? it->second : resolve_run(spec_, run.name, run.overrides).yaml);
  }
  return out;
}

const TuneCell& Tuner::cell_of(size_t run) const {
  for (const auto& cell : cells_)
    if (std::find(cell.runs.begin(), cell.runs.end(), run) != cell.runs.end()) return cell;
  throw Error("tuner: run " + std::to_string(run) + " is in no cell");
}

std::string Tuner::final_config(size_t run) const {
  const TuneCell& cell = cell_of(run);
  if (!cell.decided()) return "";
  const PlannedRun& r = plan_.runs[run];
  std::vector<std::string> overrides = r.overrides;
  for (auto& o : candidate_overrides(resolve_run(spec_, r.name, r.overrides), cell.candidates[size_t(cell.chosen)]))
    overrides.push_back(std::move(o));
  return resolve_run(spec_, r.name, overrides).yaml;
}

void Tuner::save_record() const {
  json schedule = json::array();
  for (const auto& r : schedule_) schedule.push_back({{"share", r.share}, {"runs", r.runs}, {"keep", r.keep}});
  json candidates = json::array();
  for (size_t k = 0; k < candidates_.size(); ++k) candidates.push_back(candidates_[k].label);
  json cells = json::array();
  for (size_t c = 0; c < cells_.size(); ++c) {
    const TuneCell& cell = cells_[c];
    json entries = json::array();
    for (const auto& e : cell.entries) {
      json j = {{"rung", e.rung}, {"candidate", cell.candidates[e.candidate].label}, {"run", e.run}, {"state", e.state}};
      j["metric"] = std::isfinite(e.metric) ? json(e.metric) : json(nullptr);
      if (!e.extends.empty()) j["extends"] = e.extends;
      entries.push_back(j);
    }
    json runs = json::array();
    for (size_t r : cell.runs) runs.push_back(plan_.runs[r].name);
    json labels = json::array();
    for (const auto& k : cell.candidates) labels.push_back(k.label);
    json j = {{"name", cell.name}, {"runs", runs}, {"candidates", labels}, {"entries", entries}};
    if (cell.decided()) {
      json edges = json::array();
      for (const auto& e : cell.edges) edges.push_back({{"key", e.key}, {"end", e.end}, {"why", e.why}});
      j["at_edge"] = edges;
      json values = json::object();
      for (const auto& o : candidate_overrides(cell_base_[c], cell.candidates[size_t(cell.chosen)])) {
        const auto eq = o.find('=');
        values[o.substr(0, eq)] = o.substr(eq + 1);
      }
      j["chosen"] = cell.candidates[size_t(cell.chosen)].label;
      j["chosen_values"] = values;
    }
    if (!cell.failure.empty()) j["failure"] = cell.failure;
    cells.push_back(j);
  }
  json budget = json::array();
  for (const auto& k : budget_keys_) budget.push_back(k);
  const json record = {{"metric", spec_.tune.metric}, {"eta", spec_.tune.eta},      {"extend", spec_.tune.extend}, {"budget", budget},
                       {"schedule", schedule},        {"candidates", candidates},   {"cells", cells},
                       {"cost_runs_per_cell", halving_cost(schedule_)}};
  fs::create_directories(layout_.root);
  atomic_write(layout_.root / "tune.json", record.dump(2) + "\n");
}

void Tuner::mark_tried(const Plan& pending) {
  for (const auto& r : pending.runs) retried_.insert(r.name);
}

ExecSummary run_tuning(Tuner& tuner, const ExecOptions& options, bool force) {
  ExecSummary total;
  const Layout& layout = tuner.layout();
  fs::create_directories(layout.root / "configs");
  fs::create_directories(layout.root / "runs");
  fs::create_directories(layout.root / "logs");
  tuner.refresh(options.retry_failed);
  tuner.save_record();
  while (true) {
    const Plan pending = tuner.pending_plan();
    if (pending.runs.empty()) break;
    const std::vector<std::string> configs = tuner.pending_configs(pending);
    ExecOptions opts = options;
    opts.retry_failed = true;  // the pending runs are exactly the ones to run
    opts.restart.clear();
    // The record follows every finished run, not only every finished rung: `report`
    // on a study mid-rung shows what is known.
    opts.on_run_end = [&tuner, &options] {
      tuner.refresh(options.retry_failed);
      tuner.save_record();
    };
    for (size_t i = 0; i < pending.runs.size(); ++i) {
      const std::string& name = pending.runs[i].name;
      if (stored_config_differs(layout.config(name), configs[i], nullptr)) {
        if (!force) throw ConfigError("tuning run '" + name + "' has a different config; pass --force to rerun it");
        set_aside(layout, name);
        opts.restart.insert(name);
      }
      atomic_write(layout.config(name), configs[i]);
    }
    spdlog::info("tuning: {} run(s) of {} cell(s)", pending.runs.size(), tuner.cells().size());
    const ExecSummary s = execute(layout, pending, opts);
    total.done += s.done;
    total.failed += s.failed;
    total.interrupted += s.interrupted;
    total.stopped = total.stopped || s.stopped;
    tuner.mark_tried(pending);
    tuner.refresh(options.retry_failed);
    tuner.save_record();
    if (s.stopped || s.interrupted) break;
  }
  tuner.save_record();
  return total;
}

}  // namespace biaslab::sweep
