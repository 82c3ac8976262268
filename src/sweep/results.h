#pragma once
// What a sweep's runs produced, read from their run directories (summary.json,
// metrics.csv, timing.json) wherever the runs were executed, plus the ledger's state
// when there is one.
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "sweep/plan.h"

namespace biaslab::sweep {

struct CurvePoint {
  int64_t step = 0;
  double test_acc = 0.0;  ///< NaN where only the validation split was evaluated (train.eval_test: final)
  double val_acc = std::numeric_limits<double>::quiet_NaN();  ///< NaN without a validation split
  double train_eval_acc = std::numeric_limits<double>::quiet_NaN();  ///< clean training accuracy (NaN: not measured)
};

struct RunResult {
  const PlannedRun* run = nullptr;
  std::string state;        ///< done | failed | interrupted | running | pending | missing
  std::string reason;       ///< of a failure (ledger)
  bool complete = false;    ///< summary.json present
  double metric = std::numeric_limits<double>::quiet_NaN();  ///< report.metric
  std::string family, preset;
  int64_t parameters = 0, flops_per_image = 0, images_seen = 0, steps = 0, epochs = 0, train_size = 0;
  int64_t best_epoch = 0;
  std::string dataset;      ///< data.preset of summary.json ("" when it names none)
  int64_t test_size = 0;
  double final_test_acc = std::numeric_limits<double>::quiet_NaN();
  double final_test_loss = std::numeric_limits<double>::quiet_NaN();
  double final_test_top5_acc = std::numeric_limits<double>::quiet_NaN();  ///< NaN: 5 classes or fewer
  double best_test_acc = std::numeric_limits<double>::quiet_NaN();
  double best_val_acc = std::numeric_limits<double>::quiet_NaN();
  double final_val_acc = std::numeric_limits<double>::quiet_NaN();
  double final_train_eval_acc = std::numeric_limits<double>::quiet_NaN();  ///< NaN: a run without train.train_eval_size
  double train_time_s = std::numeric_limits<double>::quiet_NaN();
  double wall_time_s = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> accuracies;  ///< the final.*_acc and best.*_acc numbers summary.json has
  std::vector<CurvePoint> curve;  ///< evaluated epochs of metrics.csv
  std::string regime;             ///< sweep/regime.h, set by the report ("" when it cannot tell)
  /// Non-empty when the run directory's config.yaml is another experiment than the
  /// sweep's planned configs/RUN.yaml (e.g. a run made by hand with other --set values):
  /// the first differing line. Such a run is left out of the statistics.
  std::string drift;
};

/// One result per planned run, in plan order. A run directory whose files are
/// unreadable is reported as a CheckpointError naming the file.
std::vector<RunResult> collect_results(const Layout& layout, const Plan& plan);

}  // namespace biaslab::sweep
