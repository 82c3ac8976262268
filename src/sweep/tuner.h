#pragma once
// The `tune` section of a sweep run: before the seeded runs of a cell (the runs that
// share their values of tune.per), every candidate (a combination of tune.params) is
// trained on a short budget and the best go on by successive halving (sweep/halving.h);
// the winner on the validation metric is what the cell's runs then use. The tuning
// runs are ordinary `biaslab train` runs in their own sweep layout:
//
//   SWEEP_DIR/tune/configs/RUN.yaml, runs/RUN/, logs/RUN.log, ledger.json
//   SWEEP_DIR/tune/tune.json   the schedule, every cell's rungs (candidate, run,
//                              state, metric) and choice: what `biaslab report` shows
//
// RUN = CELL,rung=R,CANDIDATE, e.g. preset=resnet20,rung=0,lr=x0.5. A cell's state is
// recomputed from the runs' results on every call, so a killed sweep resumes where it
// was and never reruns a finished rung. A candidate whose run fails ranks last.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sweep/executor.h"
#include "sweep/halving.h"
#include "sweep/ledger.h"
#include "sweep/plan.h"

namespace biaslab::sweep {

struct TuneCandidate {
  std::string label;               ///< e.g. "lr=x0.5,weight_decay=0.05"
  std::vector<std::string> value;  ///< per tune param: its value (YAML text), "" for a {times} param
  std::vector<double> factor;      ///< per tune param: the factor of a {times} param, NaN otherwise
};

struct TuneEntry {
  int rung = 0;
  size_t candidate = 0;  ///< in the cell's candidates
  std::string run;       ///< tuning run name
  std::string state;     ///< done | failed | pending | changed (stored config differs)
  double metric = 0.0;   ///< NaN unless done
  std::string extends;   ///< an extension beyond the grid: the param it moved ("" for the grid's runs)
};

/// A numeric param whose choice is still at an end of the values tried once the cell
/// is decided, and why the tuner went no further.
struct TuneEdge {
  std::string key;
  std::string end;  ///< "lower" | "upper"
  std::string why;  ///< e.g. "tune.extend (2) used"
};

struct TuneCell {
  std::string name;
  size_t representative = 0;  ///< plan run whose config the tuning runs start from
  std::vector<size_t> runs;   ///< the cell's planned runs
  std::vector<TuneCandidate> candidates;  ///< the grid's, then this cell's extensions beyond it
  std::vector<TuneEntry> entries;
  int rung = 0;               ///< rung awaiting runs (schedule size when decided)
  int chosen = -1;            ///< candidate, once decided
  std::vector<TuneEdge> edges;  ///< once decided: params still at an end of their values
  std::string failure;        ///< why nothing can be chosen (every candidate of a rung failed)
  bool decided() const { return chosen >= 0; }
  bool open() const { return !decided() && failure.empty(); }
};

class Tuner {
 public:
  Tuner(const SweepSpec& spec, const Plan& plan, const Layout& sweep);

  const Layout& layout() const { return layout_; }
  const std::vector<Rung>& schedule() const { return schedule_; }
  const std::vector<TuneCandidate>& candidates() const { return candidates_; }
  const std::vector<TuneCell>& cells() const { return cells_; }
  int extend() const;  ///< tune.extend

  /// Resolves every run with every candidate and every cell's tuning runs, as `train`
  /// would check them: ConfigError naming the sweep file, run and candidate; also
  /// when a tuning run has no validation split or a budget key is not a positive count.
  void check() const;

  /// Reads the tuning runs' results and moves each cell through its rungs as far as
  /// they go. With `retry_failed`, failed runs count as pending until tried again.
  /// After the last rung, a numeric param whose best value is at an end of its values
  /// gets the next value beyond that end (the grid's ratio when it is log-spaced, else
  /// its step), trained at the last rung, until the best is inside or tune.extend values
  /// were added; params are extended in their order, each from the best so far.
  void refresh(bool retry_failed = false);

  /// Tuning runs whose stored config differs from the sweep's (a changed definition).
  std::vector<std::string> changed_runs() const;

  /// The tuning runs to train next (every open cell's current rung) and their configs.
  Plan pending_plan() const;
  std::vector<std::string> pending_configs(const Plan& pending) const;

  /// Planned run `run`'s config with its cell's choice ("" while the cell is open or failed).
  std::string final_config(size_t run) const;
  /// The cell of planned run `run`.
  const TuneCell& cell_of(size_t run) const;

  /// Counts `pending`'s runs as tried (refresh with retry_failed then leaves their
  /// failures failed).
  void mark_tried(const Plan& pending);

  /// Writes tune/tune.json.
  void save_record() const;

 private:
  std::vector<std::string> candidate_overrides(const ResolvedRun& base, const TuneCandidate& candidate) const;
  TuneEntry entry_of(const TuneCell& cell, int rung, size_t candidate, const Ledger& ledger, bool retry_failed) const;
  /// Extends `cell` beyond its grid from `best` (tune.extend); false while an extension
  /// run is pending.
  bool extend_beyond_grid(TuneCell& cell, size_t& best, const Ledger& ledger, bool retry_failed) const;
  std::vector<std::string> tuning_overrides(const TuneCell& cell, int rung, size_t candidate) const;
  std::string tuning_run_name(const TuneCell& cell, int rung, size_t candidate) const;
  const std::string& tuning_config(const TuneCell& cell, int rung, size_t candidate) const;

  const SweepSpec& spec_;
  const Plan& plan_;
  Layout layout_;
  std::vector<Rung> schedule_;
  std::vector<TuneCandidate> candidates_;
  std::vector<TuneCell> cells_;
  std::vector<ResolvedRun> cell_base_;  ///< per cell: the representative with tune.set
  std::vector<std::string> budget_keys_;
  mutable std::map<std::string, std::string> config_cache_;  ///< tuning run -> resolved YAML
  std::set<std::string> retried_;
};

/// Runs the tuning rungs until every cell is decided or failed (or the sweep is
/// stopped). `force` restarts tuning runs whose config changed. Returns the tuning
/// runs' counts; tune.json is written when tuning starts and after every tuning run.
ExecSummary run_tuning(Tuner& tuner, const ExecOptions& options, bool force);

}  // namespace biaslab::sweep
