#pragma once
// Wall-clock timestamps for records (meta.json, the sweep ledger).
#include <ctime>
#include <string>

namespace biaslab {

/// Now in UTC as ISO 8601, e.g. 2026-11-29T18:44:00Z.
inline std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace biaslab
