#pragma once
// A sweep directory and the plan it was created from:
//
//   SWEEP_DIR/sweep.yaml        copy of the sweep file
//   SWEEP_DIR/plan.json         runs (name, swept values, overrides) and report settings
//   SWEEP_DIR/configs/RUN.yaml  each run's resolved config (what `biaslab train -c` runs)
//   SWEEP_DIR/runs/RUN/         each run's run directory
//   SWEEP_DIR/logs/RUN.log      output of the run's processes
//   SWEEP_DIR/ledger.json       states kept by `biaslab sweep` (sweep/ledger.h)
//
// The resolved configs make every run a self-contained command, and are how a rerun
// detects that the sweep (or its base config) changed under an existing directory.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "sweep/spec.h"

namespace biaslab::sweep {

struct Plan {
  std::string name;
  std::string tune;               ///< the tune settings as JSON text ("" when the sweep does not tune)
  std::vector<std::string> keys;  ///< swept keys in axis order
  std::vector<std::string> axes;  ///< the first key of each axis (zip partners follow it)
  ReportSpec report;
  std::vector<PlannedRun> runs;
};

struct Layout {
  std::filesystem::path root;
  std::filesystem::path plan() const { return root / "plan.json"; }
  std::filesystem::path ledger() const { return root / "ledger.json"; }
  std::filesystem::path lock() const { return root / ".lock"; }
  std::filesystem::path marker() const { return root / ".biaslab-sweep"; }  ///< written first by prepare()
  std::filesystem::path config(const std::string& run) const { return root / "configs" / (run + ".yaml"); }
  std::filesystem::path run_dir(const std::string& run) const { return root / "runs" / run; }
  std::filesystem::path log(const std::string& run) const { return root / "logs" / (run + ".log"); }
};

Plan make_plan(const SweepSpec& spec);

/// The sweep directory rule: new, empty, or a biaslab sweep directory (plan.json or the marker);
/// anything else is refused with CheckpointError (exit 5) before anything is written.
void claim_sweep_dir(const Layout& layout);

/// A run's config resolved from the sweep's base and `overrides`: as YAML (to_yaml) and
/// as key -> value text (config_values). ConfigError naming the sweep file, `run` and the key.
struct ResolvedRun {
  std::string yaml;
  std::vector<std::pair<std::string, std::string>> values;
  const std::string& at(const std::string& key) const;  ///< ConfigError when the key is absent
};
ResolvedRun resolve_run(const SweepSpec& spec, const std::string& run, const std::vector<std::string>& overrides);

/// Every run's resolved config (to_yaml), checked as `biaslab train` would: a
/// ConfigError names the sweep file, the run and the key.
std::vector<std::string> resolve_configs(const SweepSpec& spec, const Plan& plan);

/// Whether the config stored at `stored` differs from `config` (a missing file does not
/// differ); the first differing line goes to `difference`.
bool stored_config_differs(const std::filesystem::path& stored, const std::string& config, std::string* difference);

/// Moves a run's directory to ROOT/discarded/ (never deleted; a numbered name when taken).
void set_aside(const Layout& layout, const std::string& run);

/// How a sweep directory's stored plan differs from `plan` with these resolved configs
/// (an empty config, a tuned run whose cell is not decided yet, is not compared). Reads only.
struct PlanChanges {
  std::string why;                  ///< the first difference ("" = the same runs and configs)
  std::set<std::string> changed;    ///< runs whose stored config differs (or is missing)
};
PlanChanges plan_changes(const Layout& layout, const Plan& plan, const std::vector<std::string>& configs);

/// The refusal for a directory made from another sweep definition (`why`), naming --force.
std::string different_definition(const Layout& layout, const std::string& why);

/// Writes plan.json, sweep.yaml and configs/ into `layout.root` (an empty config, a
/// tuned run whose cell is not decided yet, is neither compared nor written). When the directory
/// already holds a different plan it is refused (ConfigError) unless `force`; with
/// `force` the runs whose config changed start over: their run directories are moved to
/// SWEEP_DIR/discarded/ and their names returned.
std::set<std::string> prepare(const Layout& layout, const SweepSpec& spec, const Plan& plan,
                              const std::vector<std::string>& configs, bool force);

/// The plan stored in a sweep directory (CheckpointError when missing or unreadable).
Plan read_plan(const std::filesystem::path& sweep_dir);

}  // namespace biaslab::sweep
