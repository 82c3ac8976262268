#include "core/fault.h"

#include <csignal>
#include <cstdlib>
#include <map>
#include <sstream>

namespace biaslab::fault {
namespace {

const std::multimap<std::string, int64_t>& faults() {
  static const std::multimap<std::string, int64_t> parsed = [] {
    std::multimap<std::string, int64_t> out;
    const char* env = std::getenv("BIASLAB_FAULT");
    if (!env) return out;
    // BIASLAB_FAULT_RANK=R: only the process of distributed rank R (env RANK) is affected.
    const char* only = std::getenv("BIASLAB_FAULT_RANK");
    const char* rank = std::getenv("RANK");
    if (only && std::string(only) != (rank ? rank : "0")) return out;
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ',')) {
      const auto colon = item.find(':');
      if (colon == std::string::npos) continue;
      out.emplace(item.substr(0, colon), std::stoll(item.substr(colon + 1)));
    }
    return out;
  }();
  return parsed;
}

}  // namespace

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
