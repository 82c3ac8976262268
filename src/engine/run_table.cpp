#include "engine/run_table.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "core/csv_line.h"
#include "core/errors.h"
#include "core/file_lock.h"
#include "core/fs.h"
#include "engine/run_dir.h"
#include "engine/trained_run.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The cells of a CSV file's rows by column name (header first); empty when unreadable.
std::vector<std::map<std::string, std::string>> read_csv_rows(const fs::path& file) {
  std::vector<std::map<std::string, std::string>> rows;
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line)) return rows;
  const auto header = split_csv_line(line);
  while (std::getline(in, line)) {
    const auto cells = split_csv_line(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

double number(const std::map<std::string, std::string>& row, const std::string& key) {
  const auto it = row.find(key);
  if (it == row.end() || it->second.empty()) return std::numeric_limits<double>::quiet_NaN();
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    return std::numeric_limits<double>::quiet_NaN();
  }
}

// True when a live process holds the run's lock (a lock file a killed run left is free).
bool lock_held(const fs::path& dir) {
  if (!fs::exists(dir / ".lock")) return false;
  try {
    return !FileLock(dir / ".lock").held();
  } catch (const std::exception&) {
    return false;
  }
}

RunRow read_row(const fs::path& root, const fs::path& dir) {
  RunRow r;
  r.name = dir == root ? dir.filename().string() : fs::relative(dir, root).string();
  const auto metrics = read_csv_rows(dir / "metrics.csv");
  try {
    const Config cfg = load_run_config(dir, {});
    r.family = cfg.model.family;
    r.preset = cfg.model.preset;
    if (cfg.train.steps > 0)
      r.steps_planned = cfg.train.steps;
    else if (!metrics.empty() && !std::isnan(number(metrics.front(), "step")))
      r.steps_planned = cfg.train.epochs * int64_t(number(metrics.front(), "step"));  // steps per epoch
  } catch (const std::exception&) {
    // No readable config.yaml: the columns it fills stay unknown.
  }
  double train_s = 0;
  for (const auto& row : read_csv_rows(dir / "timing.csv"))
    if (const double t = number(row, "train_s"); !std::isnan(t)) train_s += t;
  if (fs::exists(dir / "timing.csv")) r.time_s = train_s;
  if (fs::exists(dir / "summary.json")) {
    try {
      const json s = json::parse(read_file(dir / "summary.json"));
      r.state = "complete";
      r.family = s.at("model").value("family", r.family);
      r.preset = s.at("model").value("preset", r.preset);
      r.parameters = s.at("model").value("parameters", int64_t(-1));
      r.train_size = s.at("data").value("train_size", int64_t(-1));
      r.steps_done = s.value("steps", int64_t(0));
      if (r.steps_planned < 0) r.steps_planned = r.steps_done;
      r.final_acc = s.at("final").value("test_acc", r.final_acc);
      r.best_acc = s.at("best").value(s.value("selection_metric", std::string("test_acc")), r.best_acc);
      return r;
    } catch (const json::exception&) {
      r.state = "failed";  // summary.json unreadable
      return r;
    }
  }
  // Not finished: where it stands is its newest usable checkpoint.
  for (const auto& row : metrics) {
    const double val = number(row, "val_acc"), test = number(row, "test_acc");
    const double m = std::isnan(val) ? test : val;
    if (!std::isnan(m) && !(m <= r.best_acc)) r.best_acc = m;
  }
  std::optional<run_dir::ResumePoint> resume;
  try {
    resume = run_dir::find_resume_point(dir);
  } catch (const std::exception&) {
  }
  if (resume) r.steps_done = resume->state.step;
  r.state = lock_held(dir) ? "running" : resume ? "resumable" : "failed";
  return r;
}

void collect(const fs::path& root, const fs::path& dir, std::vector<RunRow>& rows) {
  if (run_dir::is_run_dir(dir)) {
    rows.push_back(read_row(root, dir));
    return;
  }
  std::vector<fs::path> children;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec) && !e.is_symlink(ec)) children.push_back(e.path());
  std::sort(children.begin(), children.end());
  for (const auto& c : children) collect(root, c, rows);
}

std::string cell(const RunRow& r, const std::string& key) {
  auto pct = [](double v) { return std::isnan(v) ? std::string() : fmt::format("{:.2f}", 100 * v); };
  if (key == "name") return r.name;
  if (key == "family") return r.family;
  if (key == "preset") return r.preset;
  if (key == "train_size") return r.train_size < 0 ? "" : std::to_string(r.train_size);
  if (key == "steps") return std::to_string(r.steps_done);
  if (key == "planned") return r.steps_planned < 0 ? "" : std::to_string(r.steps_planned);
  if (key == "state") return r.state;
  if (key == "best_acc") return pct(r.best_acc);
  if (key == "final_acc") return pct(r.final_acc);
  if (key == "params") return r.parameters < 0 ? "" : std::to_string(r.parameters);
  if (key == "time_s") return std::isnan(r.time_s) ? "" : fmt::format("{:.1f}", r.time_s);
  throw ConfigError("--sort: unknown column '" + key + "'");
}

double numeric(const RunRow& r, const std::string& key) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (key == "train_size") return r.train_size < 0 ? nan : double(r.train_size);
  if (key == "steps") return double(r.steps_done);
  if (key == "planned") return r.steps_planned < 0 ? nan : double(r.steps_planned);
  if (key == "best_acc") return r.best_acc;
  if (key == "final_acc") return r.final_acc;
  if (key == "params") return r.parameters < 0 ? nan : double(r.parameters);
  if (key == "time_s") return r.time_s;
  return nan;
}

}  // namespace

std::vector<RunRow> list_runs(const fs::path& root) {
  if (!fs::is_directory(root)) throw ConfigError(root.string() + ": no such folder (expected a folder of run directories)");
  std::vector<RunRow> rows;
  collect(root, root, rows);
  return rows;
}

const std::vector<std::string>& run_table_columns() {
  static const std::vector<std::string> columns = {"name",     "family",    "preset", "train_size", "steps", "planned",
                                                   "state",    "best_acc",  "final_acc", "params", "time_s"};
  return columns;
}

void sort_runs(std::vector<RunRow>& rows, const std::string& key) {
  const auto& cols = run_table_columns();
  if (std::find(cols.begin(), cols.end(), key) == cols.end()) {
    std::string list;
    for (const auto& c : cols) list += (list.empty() ? "" : ", ") + c;
    throw ConfigError("--sort: unknown column '" + key + "'; expected one of: " + list);
  }
  const bool text = key == "name" || key == "family" || key == "preset" || key == "state";
  std::stable_sort(rows.begin(), rows.end(), [&](const RunRow& a, const RunRow& b) {
    if (text) return cell(a, key) < cell(b, key);
    const double x = numeric(a, key), y = numeric(b, key);
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);  // unknown last
    return x > y;
  });
}

std::string runs_csv(const std::vector<RunRow>& rows) {
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  std::string out;
  for (const auto& c : run_table_columns()) out += (out.empty() ? "" : ",") + c;
  out += "\n";
  for (const auto& r : rows) {
    std::string line;
    for (const auto& c : run_table_columns()) {
      if (!line.empty()) line += ',';
      line += quoted(cell(r, c));
    }
    out += line + "\n";
  }
  return out;
}

std::string runs_text(const std::vector<RunRow>& rows) {
  // name | model (preset or family) | train images | steps done/planned | state | best % | final % | params | time
  const std::vector<std::string> header = {"run", "model", "train", "steps", "state", "best%", "final%", "params", "time"};
  std::vector<std::vector<std::string>> table = {header};
  for (const auto& r : rows) {
    const std::string planned = r.steps_planned < 0 ? "?" : std::to_string(r.steps_planned);
    const std::string model = r.preset.empty() ? r.family : r.preset + (r.family.empty() ? "" : " (" + r.family + ")");
    table.push_back({r.name, model, cell(r, "train_size"), std::to_string(r.steps_done) + "/" + planned, r.state,
                     cell(r, "best_acc"), cell(r, "final_acc"),
                     r.parameters < 0 ? "" : fmt::format("{:.2f}M", double(r.parameters) / 1e6),
                     std::isnan(r.time_s) ? "" : fmt::format("{:.0f}s", r.time_s)});
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& row : table)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const bool left = i < 2 || i == 4;  // text left, numbers right
      line += (i ? "  " : "") + (left ? fmt::format("{:<{}}", row[i], width[i]) : fmt::format("{:>{}}", row[i], width[i]));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out += fmt::format("{} run(s)\n", rows.size());
  return out;
}

}  // namespace biaslab
