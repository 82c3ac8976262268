#include "core/kernel_log.h"

#include <mutex>
#include <set>

namespace biaslab::kernel_log {
namespace {

std::mutex g_mutex;
std::set<std::string>& entries() {
  static std::set<std::string> set;
  return set;
}

}  // namespace

void note(const char* kernel, const char* path) {
  std::string entry = std::string(kernel) + " (" + path + ")";
  std::lock_guard<std::mutex> lock(g_mutex);
  entries().insert(std::move(entry));
}

std::vector<std::string> ran() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return {entries().begin(), entries().end()};
}

void clear() {
  std::lock_guard<std::mutex> lock(g_mutex);
  entries().clear();
}

}  // namespace biaslab::kernel_log
