#include "core/cpu_info.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace biaslab {
namespace {

// The flags kernels dispatch on, in the order they are reported.
const char* const kIsaFlags[] = {"avx2",        "fma",      "avx512f", "avx512bw", "avx512vl",
                                 "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile"};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") + 1 - b);
}

}  // namespace

bool CpuInfo::has(const std::string& flag) const { return std::find(isa.begin(), isa.end(), flag) != isa.end(); }

std::string CpuInfo::str() const {
  std::string s = model + " (";
  for (size_t i = 0; i < isa.size(); ++i) s += (i ? " " : "") + isa[i];
  return s + ")";
}

void to_json(nlohmann::json& j, const CpuInfo& cpu) { j = {{"model", cpu.model}, {"isa", cpu.isa}}; }

CpuInfo parse_cpuinfo(const std::string& text) {
  CpuInfo info;
  std::istringstream in(text);
  std::string line;
  bool flags_seen = false;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && info.model.empty()) info.model = value;
    if (key == "flags" && !flags_seen) {
      flags_seen = true;
      std::istringstream words(value);
      std::vector<std::string> present;
      for (std::string w; words >> w;) present.push_back(w);
      for (const char* f : kIsaFlags)
        if (std::find(present.begin(), present.end(), f) != present.end()) info.isa.emplace_back(f);
    }
  }
  if (info.model.empty()) info.model = "unknown";
  return info;
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = [] {
    std::ifstream in("/proc/cpuinfo");
    std::stringstream text;
    text << in.rdbuf();
    return parse_cpuinfo(text.str());
  }();
  return info;
}

}  // namespace biaslab
