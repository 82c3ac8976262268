#include "sweep/results.h"

#include <nlohmann/json.hpp>

#include <sstream>

#include "config/experiment_identity.h"
#include "core/csv_line.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/text_diff.h"
#include "sweep/ledger.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace biaslab::sweep {
namespace {

double number_at(const json& j, const std::string& dotted) {
  const json* node = &j;
  std::istringstream parts(dotted);
  std::string part;
  while (std::getline(parts, part, '.')) {
    if (!node->is_object() || !node->contains(part)) return std::numeric_limits<double>::quiet_NaN();
    node = &node->at(part);
  }
  return node->is_number() ? node->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

std::vector<CurvePoint> read_curve(const fs::path& file) {
  std::vector<CurvePoint> curve;
  if (!fs::exists(file)) return curve;
  std::istringstream in(read_file(file));
  std::string line;
  std::vector<std::string> header;
  if (!std::getline(in, line)) return curve;
  header = split_csv_line(line);
  const auto col = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return int(i);
    throw CheckpointError(file.string() + ": no '" + name + "' column");
  };
  const int step_col = col("step"), acc_col = col("test_acc");
  int val_col = -1, train_col = -1;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "val_acc") val_col = int(i);
    if (header[i] == "train_eval_acc") train_col = int(i);
  }
  while (std::getline(in, line)) {
    const auto cells = split_csv_line(line);
    if (int(cells.size()) <= std::max(step_col, acc_col)) continue;
    const bool has_val = val_col >= 0 && val_col < int(cells.size()) && !cells[val_col].empty();
    if (cells[acc_col].empty() && !has_val) continue;  // not evaluated
    try {
      CurvePoint p{std::stoll(cells[step_col]), std::numeric_limits<double>::quiet_NaN()};
      if (!cells[acc_col].empty()) p.test_acc = std::stod(cells[acc_col]);  // empty: train.eval_test final
      if (has_val) p.val_acc = std::stod(cells[val_col]);
      if (train_col >= 0 && train_col < int(cells.size()) && !cells[train_col].empty())
        p.train_eval_acc = std::stod(cells[train_col]);
      curve.push_back(p);
    } catch (const std::exception&) {
      throw CheckpointError(file.string() + ": malformed row '" + line + "'");
    }
  }
  return curve;
}

// The first line where the run's config and the planned one are different experiments
// (threads, device and the like do not count: config/experiment_identity.h); "" if none.
std::string config_drift(const fs::path& planned, const fs::path& run_dir) {
  const fs::path used = run_dir / "config.yaml";
  if (!fs::exists(planned) || !fs::exists(used)) return "";
  std::string a, b;
  try {
    a = experiment_identity(read_file(planned), planned.parent_path());
    b = experiment_identity(read_file(used), run_dir);
  } catch (const CheckpointError& e) {
    return std::string("its config does not load: ") + e.what();
  }
  if (a == b) return "";
  const LineDifference d = first_line_difference(a, b);
  return describe_difference(d, "planned", "ran with");
}

}  // namespace

std::vector<RunResult> collect_results(const Layout& layout, const Plan& plan) {
  const Ledger ledger(layout.ledger());
  std::vector<RunResult> out;
  for (const auto& run : plan.runs) {
    RunResult r;
    r.run = &run;
    const fs::path dir = layout.run_dir(run.name);
    const auto it = ledger.entries().find(run.name);
    r.state = it != ledger.entries().end() ? it->second.state : (fs::exists(dir) ? "incomplete" : "missing");
    if (it != ledger.entries().end()) r.reason = it->second.reason;
    const fs::path summary_file = dir / "summary.json";
    if (fs::exists(summary_file)) {
      json s;
      try {
        s = json::parse(read_file(summary_file));
        r.complete = true;
        r.state = "done";
        r.metric = number_at(s, plan.report.metric);
        r.family = s.at("model").value("family", "");
        r.preset = s.at("model").value("preset", "");
        r.parameters = s.at("model").value("parameters", int64_t(0));
        r.flops_per_image = s.at("model").value("flops_per_image", int64_t(0));
        r.images_seen = s.value("images_seen", int64_t(0));
        r.steps = s.value("steps", int64_t(0));
        r.epochs = s.value("epochs", int64_t(0));
        r.train_size = s.at("data").value("train_size", int64_t(0));
        r.dataset = s.at("data").value("preset", "");
        r.test_size = s.at("data").value("test_size", int64_t(0));
        r.best_epoch = s.at("best").value("epoch", int64_t(0));
        r.final_test_acc = number_at(s, "final.test_acc");
        r.final_test_loss = number_at(s, "final.test_loss");
        r.final_test_top5_acc = number_at(s, "final.test_top5_acc");
        r.best_test_acc = number_at(s, "best.test_acc");
        r.best_val_acc = number_at(s, "best.val_acc");
        r.final_val_acc = number_at(s, "final.val_acc");
        r.final_train_eval_acc = number_at(s, "final.train_eval_acc");
        for (const std::string section : {"final", "best"})
          if (s.contains(section) && s.at(section).is_object())
            for (const auto& [k, v] : s.at(section).items())
              if (v.is_number() && report_metric_problem(section + "." + k).empty())
                r.accuracies.push_back(section + "." + k);
      } catch (const json::exception& e) {
        throw CheckpointError(summary_file.string() + ": unreadable: " + e.what());
      }
      if (fs::exists(dir / "timing.json")) {
        try {
          const json t = json::parse(read_file(dir / "timing.json"));
          r.train_time_s = t.value("train_time_s", r.train_time_s);
          r.wall_time_s = t.value("last_process_wall_time_s", r.wall_time_s);
        } catch (const json::exception& e) {
          throw CheckpointError((dir / "timing.json").string() + ": unreadable: " + e.what());
        }
      }
      r.curve = read_curve(dir / "metrics.csv");
      r.drift = config_drift(layout.config(run.name), dir);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace biaslab::sweep
