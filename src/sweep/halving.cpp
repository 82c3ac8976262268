#include "sweep/halving.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace biaslab::sweep {

int halving_rungs(int candidates, int eta) {
  int rungs = 1;
  for (long long reach = eta; reach < candidates; reach *= eta) ++rungs;
  return rungs;
}

std::vector<Rung> halving_schedule(int candidates, int eta, int rungs) {
  if (candidates < 2 || eta < 2 || rungs < 1 || rungs > halving_rungs(candidates, eta))
    throw std::invalid_argument("halving_schedule: needs candidates >= 2, eta >= 2, 1 <= rungs <= halving_rungs");
  std::vector<Rung> schedule;
  int alive = candidates;
  for (int r = 0; r < rungs; ++r) {
    Rung rung;
    rung.share = std::pow(double(eta), double(r - rungs));
    rung.runs = alive;
    rung.keep = r + 1 == rungs ? 1 : (alive + eta - 1) / eta;
    alive = rung.keep;
    schedule.push_back(rung);
  }
  return schedule;
}

double halving_cost(const std::vector<Rung>& schedule) {
  double cost = 0.0;
  for (const auto& r : schedule) cost += r.runs * r.share;
  return cost;
}

std::vector<size_t> best_of(const std::vector<double>& metrics, size_t keep) {
  std::vector<size_t> order(metrics.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const bool fa = std::isfinite(metrics[a]), fb = std::isfinite(metrics[b]);
    if (fa != fb) return fa;
    return fa && metrics[a] > metrics[b];
  });
  order.resize(std::min(keep, order.size()));
  return order;
}

}  // namespace biaslab::sweep
