#pragma once
// What limits a run (its regime), the rule `biaslab report` classifies runs and cells
// by, and its budget check: pure functions on numbers, no I/O (docs/sweeps.md,
// "Regimes and convergence").
//
//   fits       the model fits its training data: clean training accuracy (in eval mode,
//              without augmentation: train.train_eval_size) at least fit_level, or above
//              the held-out accuracy by more than fit_gap. More data is the lever.
//   underfits  it does not, and more steps still raise it: its clean training accuracy
//              rose by more than min_gain over the last `tail` of its steps, or, where the
//              sweep varies the budget, the next larger budget raises the metric by more
//              than delta. More steps are the lever.
//   plateau    it does not fit, and more steps do not move it (the rise, or the next
//              budget's paired change, is within the threshold): capacity, optimiser or
//              regularisation is the lever.
//   ""         cannot tell: no clean training accuracy (runs from before
//              train.train_eval_size) or no evaluation before the tail.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace biaslab::sweep {

struct RegimeRule {
  double tail = 0.2;        ///< share of a run's last steps whose training-accuracy rise is looked at
  double min_gain = 0.005;  ///< a rise above this (0.005 = 0.5 points) counts as still fitting
  double fit_gap = 0.03;    ///< training minus held-out accuracy above which the model fits its data
  double fit_level = 0.99;  ///< training accuracy at or above which the model fits its data
};

/// The rise of `curve` ((step, accuracy) in step order) over the last `tail` of `steps`:
/// its last value minus its last value at or before step steps * (1 - tail). NaN when
/// the curve has no point before the tail or none inside it.
double tail_rise(const std::vector<std::pair<int64_t, double>>& curve, int64_t steps, double tail);

/// Whether a model with these final clean training and held-out accuracies fits its
/// training data (false when either is NaN).
bool fits_training_data(double train_acc, double held_out_acc, const RegimeRule& rule);

/// "fits" | "underfits" | "plateau" | "" (see above) from a run's (or a cell's mean)
/// final accuracies and training-accuracy rise over the tail.
std::string regime_of(double train_acc, double held_out_acc, double rise, const RegimeRule& rule);

/// The regime once the paired change of the metric from this budget to the next larger
/// one is measured: a model that does not fit its data is `underfits` when the change
/// exceeds delta, else `plateau`; `fits` stays.
std::string regime_with_budget(const std::string& regime, double train_acc, double held_out_acc, double change,
                               double delta, const RegimeRule& rule);

}  // namespace biaslab::sweep
