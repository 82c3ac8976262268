// The tuning part of `biaslab report` for sweeps with a `tune` section: what each cell
// chose and how (every rung's candidates with their validation metric), from
// SWEEP_DIR/tune/tune.json as `biaslab sweep` last wrote it (sweep/tuner.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/errors.h"
#include "core/fs.h"
#include "sweep/report_internal.h"
#include "sweep/values.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace biaslab::sweep::detail {
namespace {

std::string share_text(double share) {
  const double inverse = 1.0 / share;
  return std::fabs(inverse - std::round(inverse)) < 1e-9 ? fmt::format("1/{:.0f}", inverse) : fmt::format("{:.3g}", share);
}

// "optim.lr x [0.5, 1, 2], optim.weight_decay in [1.0e-4, 5.0e-4]"
std::string params_text(const json& tune) {
  std::string out;
  for (const auto& p : tune.at("params")) {
    std::string list;
    if (p.contains("times"))
      for (const auto& f : p.at("times")) list += (list.empty() ? "" : ", ") + fmt::format("{:g}", f.get<double>());
    else
      for (const auto& v : p.at("values")) list += (list.empty() ? "" : ", ") + v.get<std::string>();
    std::string sets;
    if (p.contains("variants"))
      for (size_t i = 0; i < p.at("variants").size(); ++i) {
        std::string set;
        for (const auto& kv : p.at("variants")[i])
          set += (set.empty() ? "" : ", ") + kv[0].get<std::string>() + ": " + kv[1].get<std::string>();
        sets += (sets.empty() ? "" : "; ") + p.at("values")[i].get<std::string>() + " = {" + set + "}";
      }
    out += (out.empty() ? "" : "; ") + p.at("key").get<std::string>() +
           (p.contains("times") ? " × [" + list + "] of the run's value"
            : p.contains("variants") ? " in variants [" + sets + "]"
                                     : " in [" + list + "]");
  }
  return out;
}

// A tune param's grid as numbers when it is one ordered (strictly monotone) numeric
// list of at least 3 values, where a choice at either end says the optimum may lie
// beyond it; else empty.
std::vector<double> ordered_grid(const json& param) {
  std::vector<double> grid;
  if (param.contains("variants")) return {};  // labels of override sets
  if (param.contains("times")) {
    for (const auto& f : param.at("times")) grid.push_back(f.get<double>());
  } else {
    for (const auto& v : param.at("values")) {
      double x = 0.0;
      if (!parse_number(v.get<std::string>(), &x)) return {};
      grid.push_back(x);
    }
  }
  if (grid.size() < 3) return {};
  const bool up = std::is_sorted(grid.begin(), grid.end(), std::less_equal<double>());
  const bool down = std::is_sorted(grid.begin(), grid.end(), std::greater_equal<double>());
  return up || down ? grid : std::vector<double>{};
}

// Per tune param, the value index of candidate `position` (the product of the params,
// the last varying fastest, as the tuner enumerates them).
std::vector<size_t> candidate_index(const json& params, size_t position) {
  std::vector<size_t> index(params.size());
  for (size_t p = params.size(); p-- > 0;) {
    const size_t n = params[p].contains("times") ? params[p].at("times").size() : params[p].at("values").size();
    index[p] = position % n;
    position /= n;
  }
  return index;
}

}  // namespace

TuningRecord read_tuning(const Layout& layout, const Plan& plan) {
  TuningRecord rec;
  if (plan.tune.empty()) return rec;
  rec.tuned = true;
  const fs::path file = layout.root / "tune" / "tune.json";
  const json tune = json::parse(plan.tune);
  std::string per;
  for (const auto& k : tune.at("per")) per += (per.empty() ? "" : ", ") + k.get<std::string>();
  rec.markdown = "## Tuning\n\n" +
                 (per.empty() ? std::string("The whole sweep is one cell; it")
                              : "Each cell (the runs that share their values of " + per + ")") +
                 " chose its values by successive halving on " + tune.at("metric").get<std::string>() +
                 " (the validation split, never the test set) before its seeded runs: " + params_text(tune) +
                 fmt::format("; eta {}.\n\n", tune.at("eta").get<int>());
  rec.csv = "cell,rung,share,candidate,run,state,metric,chosen,extends\n";
  if (!fs::exists(file)) {
    rec.markdown += "Tuning has not started (no " + file.string() + ").\n";
    return rec;
  }
  json j;
  try {
    j = json::parse(read_file(file));
    const json& schedule = j.at("schedule");
    std::string rungs;
    for (size_t r = 0; r < schedule.size(); ++r)
      rungs += fmt::format("{}rung {}: {} candidates at {} of the budget, best {} kept", r ? "; " : "", r,
                           schedule[r].at("runs").get<int>(), share_text(schedule[r].at("share").get<double>()),
                           schedule[r].at("keep").get<int>());
    std::string budget;
    for (const auto& k : j.at("budget")) budget += (budget.empty() ? "" : ", ") + k.get<std::string>();
    const std::string extension =
        j.contains("extend") ? fmt::format(" A numeric choice at an end of its grid gets up to {} value(s) beyond that "
                                           "end (tune.extend), trained at the last rung, until the best is inside.",
                                           j.at("extend").get<int>())
                             : "";
    rec.markdown += "Schedule: " + rungs +
                    fmt::format(" (scaled: {}); {:.2f} runs' budget per cell.{} Below, per cell, each tuning run's "
                                "{} (%), the choice in bold.\n\n",
                                budget, j.at("cost_runs_per_cell").get<double>(), extension,
                                metric_name(j.at("metric").get<std::string>()));
    const json& params = tune.at("params");
    // Per param: decided cells that chose its smallest / largest value: as the tuner
    // recorded it after extending the grid (at_edge), or, in a record from before
    // extensions, from the ordered grid.
    std::vector<int> at_low(params.size(), 0), at_high(params.size(), 0);
    int decided = 0, extended = 0;
    for (const auto& cell : j.at("cells")) {
      const std::string name = cell.at("name").get<std::string>();
      const std::string chosen = cell.value("chosen", "");
      const json& candidates = cell.contains("candidates") ? cell.at("candidates") : j.at("candidates");
      std::string edge;
      if (!chosen.empty()) {
        std::string values;
        for (const auto& [k, v] : cell.at("chosen_values").items()) values += (values.empty() ? "" : ", ") + k + "=" + v.get<std::string>();
        rec.chosen[name] = values;
        ++decided;
        if (cell.contains("at_edge")) {
          for (const auto& e : cell.at("at_edge")) {
            const std::string key = e.at("key").get<std::string>();
            const bool high = e.at("end").get<std::string>() == "upper";
            for (size_t p = 0; p < params.size(); ++p)
              if (params[p].at("key").get<std::string>() == key) ++(high ? at_high : at_low)[p];
            edge += fmt::format("; at the {} end of {}'s values ({})", high ? "upper" : "lower", key, e.at("why").get<std::string>());
          }
        } else {
          const auto it = std::find(candidates.begin(), candidates.end(), json(chosen));
          const std::vector<size_t> index = candidate_index(params, size_t(it - candidates.begin()));
          for (size_t p = 0; p < params.size() && it != candidates.end(); ++p) {
            const std::vector<double> grid = ordered_grid(params[p]);
            if (grid.empty() || (index[p] != 0 && index[p] + 1 != grid.size())) continue;
            const bool high = grid[index[p]] == *std::max_element(grid.begin(), grid.end());
            ++(high ? at_high : at_low)[p];
            edge += fmt::format("; at the {} end of {}'s grid", high ? "upper" : "lower", params[p].at("key").get<std::string>());
          }
        }
      }
      // The extensions beyond the grid, in the order tried.
      std::map<std::string, std::string> beyond;  // candidate -> the param it extends
      std::string extensions;
      for (const auto& e : cell.at("entries")) {
        if (!e.contains("extends")) continue;
        const std::string cand = e.at("candidate").get<std::string>();
        beyond[cand] = e.at("extends").get<std::string>();
        extensions += (extensions.empty() ? "" : ", ") + ("`" + cand + "`") +
                      (e.at("metric").is_number() ? " " + pct(e.at("metric").get<double>()) + "%" : " " + e.at("state").get<std::string>());
      }
      if (!extensions.empty()) {
        ++extended;
        edge += "; tried beyond the grid: " + extensions;
      }
      // Candidate x rung table of the metric.
      std::map<std::string, std::map<int, std::string>> cells;
      for (const auto& e : cell.at("entries")) {
        const int rung = e.at("rung").get<int>();
        const std::string cand = e.at("candidate").get<std::string>();
        const std::string state = e.at("state").get<std::string>();
        const bool has = e.at("metric").is_number();
        cells[cand][rung] = has ? pct(e.at("metric").get<double>()) : state;
        rec.csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", csv_cell(name), rung,
                               schedule.at(size_t(rung)).at("share").get<double>(), csv_cell(cand),
                               csv_cell(e.at("run").get<std::string>()), state,
                               has ? fmt::format("{:.6g}", e.at("metric").get<double>()) : "", cand == chosen ? "yes" : "",
                               csv_cell(e.value("extends", "")));
      }
      rec.markdown += "**" + name + "**: " +
                      (!chosen.empty() ? "chose `" + chosen + "` (" + rec.chosen[name] + ")" + edge
                                       : cell.contains("failure") ? cell.at("failure").get<std::string>() : "tuning in progress") +
                      "\n\n| candidate |";
      for (size_t r = 0; r < schedule.size(); ++r)
        rec.markdown += fmt::format(" rung {} ({}) |", r, share_text(schedule[r].at("share").get<double>()));
      rec.markdown += "\n|---|";
      for (size_t r = 0; r < schedule.size(); ++r) rec.markdown += "---|";
      rec.markdown += "\n";
      for (const auto& c : candidates) {
        const std::string cand = c.get<std::string>();
        const auto ext = beyond.find(cand);
        rec.markdown += "| " + (cand == chosen ? "**" + cand + "**" : cand) +
                        (ext != beyond.end() ? " (beyond the grid of " + ext->second + ")" : "") + " |";
        for (size_t r = 0; r < schedule.size(); ++r) {
          const auto it = cells[cand].find(int(r));
          rec.markdown += " " + (it == cells[cand].end() ? std::string("") : it->second) + " |";
        }
        rec.markdown += "\n";
      }
      rec.markdown += "\n";
    }
    if (extended > 0) rec.markdown += fmt::format("{} of {} cells tried values beyond a grid.\n\n", extended, j.at("cells").size());
    for (size_t p = 0; p < params.size(); ++p) {
      if (at_low[p] + at_high[p] == 0) continue;
      rec.edge_check += fmt::format(
          "{}{} of {} decided cells chose an end of {}'s grid ({} the largest, {} the smallest value)",
          rec.edge_check.empty() ? "" : "; ", at_low[p] + at_high[p], decided, params[p].at("key").get<std::string>(),
          at_high[p], at_low[p]);
    }
    if (!rec.edge_check.empty())
      rec.edge_check = "\nTuning: " + rec.edge_check +
                       ". " + (j.contains("extend") ? fmt::format("The tuner added up to {} value(s) beyond each such end "
                                                                    "(tune.extend) before it stopped. ",
                                                                    j.at("extend").get<int>())
                                                      : std::string()) +
                       "A choice at the end of the values tried does not show that the optimum is inside them: a "
                       "value beyond may be better still.\n";
  } catch (const json::exception& e) {
    throw CheckpointError(file.string() + ": unreadable tuning record: " + e.what());
  }
  return rec;
}

}  // namespace biaslab::sweep::detail
