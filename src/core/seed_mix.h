#pragma once
// Deriving independent seeds from (seed, epoch, batch, sample, ...) tuples.
#include <cstdint>

namespace biaslab {

/// SplitMix64's finaliser (Steele et al. 2014): a bijection that decorrelates nearby
/// inputs, so mix(seed ^ mix(i)) gives unrelated streams for consecutive i.
inline uint64_t mix_seed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace biaslab
