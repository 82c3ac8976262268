#include "core/fault.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <map>
#include <sstream>
#include <vector>

#include "core/errors.h"

namespace biaslab::fault {
namespace {

const std::vector<std::string> kKinds = {"kill_after_step", "kill_in_checkpoint", "nan_loss_at_step",
                                         "sigterm_after_step"};

// BIASLAB_FAULT as (kind, step) pairs; ConfigError when malformed.
std::multimap<std::string, int64_t> parse(const std::string& env) {
  std::multimap<std::string, int64_t> out;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto colon = item.find(':');
    const std::string kind = item.substr(0, colon);
    const std::string step = colon == std::string::npos ? "" : item.substr(colon + 1);
    const bool known = std::find(kKinds.begin(), kKinds.end(), kind) != kKinds.end();
    if (!known || step.empty() || step.size() > 18 || step.find_first_not_of("0123456789") != std::string::npos) {
      std::string kinds;
      for (const auto& k : kKinds) kinds += (kinds.empty() ? "" : ", ") + k;
      throw ConfigError("BIASLAB_FAULT='" + env + "': '" + item + "' is not KIND:STEP with KIND one of " + kinds +
                        " and STEP a non-negative integer (unset the variable outside the reliability tests)");
    }
    out.emplace(kind, std::stoll(step));
  }
  return out;
}

const std::multimap<std::string, int64_t>& faults() {
  static const std::multimap<std::string, int64_t> parsed = [] {
    const char* env = std::getenv("BIASLAB_FAULT");
    if (!env) return std::multimap<std::string, int64_t>();
    auto out = parse(env);
    // BIASLAB_FAULT_RANK=R: only the process of distributed rank R (env RANK) is affected.
    const char* only = std::getenv("BIASLAB_FAULT_RANK");
    const char* rank = std::getenv("RANK");
    if (only && std::string(only) != (rank ? rank : "0")) out.clear();
    return out;
  }();
  return parsed;
}

}  // namespace

void check_environment() {
  if (const char* env = std::getenv("BIASLAB_FAULT")) parse(env);
}

bool at(const std::string& kind, int64_t step) {
  auto range = faults().equal_range(kind);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second == step) return true;
  return false;
}

void kill_if(const std::string& kind, int64_t step) {
  if (at(kind, step)) std::raise(SIGKILL);
}

}  // namespace biaslab::fault
