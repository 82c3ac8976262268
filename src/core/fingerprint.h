#pragma once
// A short fingerprint of bytes (64-bit FNV-1a, as 16 hex digits): names what a run used
// (its weights, its training images) so that two runs can be compared at a glance. Not
// cryptographic: equal fingerprints of different data are possible, if unlikely.
#include <cstdint>
#include <cstdio>
#include <string>

namespace biaslab {

class Fingerprint {
 public:
  void feed(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ULL;
  }
  void feed(const std::string& s) { feed(s.data(), s.size()); }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

}  // namespace biaslab
