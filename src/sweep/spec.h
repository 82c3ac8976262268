#pragma once
// A sweep file: a base config, dotted-key overrides for every run (`set`), axes
// (`grid`: one key per axis; `zip`: keys that vary together; `variants`: an axis of
// named override sets, e.g. cnn / vit_window5), per-value overrides
// (`overrides`: a `set` applied to the runs whose swept values match `when`) and what
// the report plots (`report`). Expanding it gives one planned run per grid point, each
// a list of KEY=VALUE overrides of the base config and a stable name built from its
// swept values. This header does not expose yaml-cpp.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace biaslab::sweep {

using KeyValue = std::pair<std::string, std::string>;  ///< dotted key, value as YAML text

struct Axis {
  std::vector<std::string> keys;                 ///< one key (grid), several (zip) or the axis name (variants)
  std::vector<std::vector<std::string>> points;  ///< points[i][k]: value of keys[k] at point i
  /// variants only: the overrides each named point stands for (empty for grid and zip).
  std::vector<std::vector<KeyValue>> variant_sets;
};

struct ConditionalSet {
  std::vector<std::pair<std::string, std::vector<std::string>>> when;  ///< key -> accepted values
  std::vector<KeyValue> set;
};

struct ReportSpec {
  std::string metric = "final.test_acc";  ///< final.<m> or best.<m> from summary.json, an accuracy (*_acc)
  std::string x;       ///< swept key on the x axis of the line plot ("" = none)
  std::string series;  ///< swept key naming the lines and bars ("" = every other swept key)
  /// Two values of `series` (report.gap: {baseline: B, target: T}): the report gives,
  /// per configuration of the other keys, the share of the paired gap T - B that each
  /// other series value closes. Both "" when not asked for.
  std::string gap_baseline, gap_target;
  /// Where the sweep varies the budget (train.epochs or train.steps), a budget counts as
  /// converged when the next larger one changes the metric by at most this (paired mean
  /// over seeds; 0.003 = 0.3 points).
  double converged_delta = 0.003;
};

/// A `tune` section: candidate values for some keys, chosen per cell of the grid by
/// successive halving on a validation metric before the seeded runs (sweep/tuner.h).
struct TuneParam {
  std::string key;                  ///< a dotted config key, or a plain word naming variants
  std::vector<std::string> values;  ///< absolute values (YAML text), or the variants' labels, or
  std::vector<double> times;        ///< factors of the run's own value (`{times: [0.5, 1, 2]}`)
  /// `{variants: {LABEL: {dotted.key: value, ...}}}`: per label (in `values`), the
  /// overrides it stands for; a categorical param, never extended. Empty otherwise.
  std::vector<std::vector<KeyValue>> variant_sets;
  size_t size() const { return times.empty() ? values.size() : times.size(); }
};

struct TuneSpec {
  std::vector<TuneParam> params;          ///< empty: the sweep does not tune
  std::string metric = "best.val_acc";    ///< final.<m> or best.<m>, a validation accuracy
  std::vector<std::string> per;           ///< axes a cell is defined by (default: every non-seed axis)
  int eta = 3;                            ///< keep the best 1/eta at each rung
  int rungs = 0;                          ///< 0: ceil(log_eta(candidates)), so the last rung has <= eta
  std::vector<std::string> budget;        ///< keys scaled by a rung's share (default: train.steps or
                                          ///< train.epochs, and sched.warmup_steps)
  std::vector<KeyValue> set;              ///< overrides for the tuning runs only
  int extend = 2;                         ///< per numeric param: values the tuner may add beyond
                                          ///< its grid's edge when the choice lies on it
  bool enabled() const { return !params.empty(); }
  size_t candidates() const;              ///< product of the params' list lengths
};

struct SweepSpec {
  std::filesystem::path file;     ///< the sweep file
  std::string name;
  std::string base_yaml;          ///< the base config's text
  std::string base_source;        ///< its file name (or "<file>: base") for messages
  std::filesystem::path base_file; ///< the base config file ("" when given inline)
  int64_t max_runs = 10000;        ///< refuse grids with more runs (a typo can ask for millions)
  std::vector<KeyValue> set;
  std::vector<Axis> axes;
  std::vector<ConditionalSet> overrides;
  ReportSpec report;
  TuneSpec tune;
};

struct PlannedRun {
  std::string name;                 ///< stable directory name, e.g. preset=vit_lite_p4,seed=0
  std::vector<KeyValue> swept;      ///< every swept key with its value, in axis order
  std::vector<std::string> overrides;  ///< KEY=VALUE for load_config: set, swept, matching overrides
  std::string cell;                 ///< tuned sweeps: the tuning cell ("" when not tuned)
};

/// Reads and checks a sweep file. ConfigError naming file:line and key on bad input.
SweepSpec load_sweep(const std::filesystem::path& file);

/// The runs of the grid, last axis varying fastest. ConfigError when two runs would
/// get the same name.
std::vector<PlannedRun> expand(const SweepSpec& spec);

/// Swept keys in axis order (zip partners included).
std::vector<std::string> swept_keys(const SweepSpec& spec);

/// True for keys that only replicate a run (their last component ends in "seed"): the
/// report averages over them.
bool is_replicate_key(const std::string& key);

/// "" when `metric` can be a report metric (final.<accuracy> or best.<accuracy> from
/// summary.json), else what was expected.
std::string report_metric_problem(const std::string& metric);

/// The name of a run's tuning cell: its values of `tune.per` ("all" when per is empty).
std::string cell_name(const SweepSpec& spec, const PlannedRun& run);

/// The last component of a dotted key ("data.train_fraction" -> "train_fraction").
std::string last_component(const std::string& key);

}  // namespace biaslab::sweep
