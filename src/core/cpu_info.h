#pragma once
// What CPU this process runs on, read once from /proc/cpuinfo (Linux). Every timing and
// every fp32 result depends on it (kernels dispatch by instruction set), so run
// directories (meta.json) and benchmarks record it.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace biaslab {

struct CpuInfo {
  std::string model;              ///< "model name", e.g. "AMD EPYC"; "unknown" if unreadable
  std::vector<std::string> isa;   ///< of the flags that matter for kernels, those present
                                  ///< (avx2, fma, avx512f, avx512_bf16, amx_bf16, ...)
  bool has(const std::string& flag) const;
  /// "AMD EPYC (avx2 fma avx512f avx512_bf16)"
  std::string str() const;
};

/// This machine's CPU (computed once).
const CpuInfo& cpu_info();

/// {"model": ..., "isa": [...]}, as meta.json and `bench --json` record it (found by
/// nlohmann::json through argument-dependent lookup).
void to_json(nlohmann::json& j, const CpuInfo& cpu);

/// Parses /proc/cpuinfo text (its first processor's "model name" and "flags").
CpuInfo parse_cpuinfo(const std::string& text);

}  // namespace biaslab
