#pragma once
// Successive halving, the schedule of a sweep's `tune` section: every candidate starts on
// a short budget; at each rung the best 1/eta (rounded up) go on to a budget eta times
// longer, and the best of the last rung is chosen. The last rung runs at 1/eta of the
// full budget, so the seeded runs that follow are the full-budget rung: with
// eta^R candidates and R rungs each rung costs one full run, R in all (9 candidates,
// eta 3: 9 runs at 1/9 and 3 at 1/3 = 2 runs' worth). Pure functions, no I/O.
#include <cstddef>
#include <vector>

namespace biaslab::sweep {

struct Rung {
  double share = 1.0;  ///< of the full budget
  int runs = 0;        ///< candidates trained at this rung
  int keep = 0;        ///< of them, going on (to the next rung, or 1: the choice)
};

/// Rungs that take `candidates` down to one: ceil(log_eta(candidates)), at least 1.
int halving_rungs(int candidates, int eta);

/// The schedule for `candidates` (>= 2) with `rungs` (1 .. halving_rungs) rungs.
std::vector<Rung> halving_schedule(int candidates, int eta, int rungs);

/// Full-budget runs the schedule costs: sum of runs x share.
double halving_cost(const std::vector<Rung>& schedule);

/// Indices of the `keep` best metrics, best first; NaN (a failed run) ranks last and
/// ties go to the earlier candidate, so the choice is deterministic.
std::vector<size_t> best_of(const std::vector<double>& metrics, size_t keep);

}  // namespace biaslab::sweep
