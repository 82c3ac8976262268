#pragma once
// A bound on what a training run may ask of the machine, checked from the config alone
// before any model or data is allocated: a typo such as model.depth: 10000 or
// train.batch_size: 1e12 is a ConfigError naming the keys, not an allocator failure.
//
// The estimate is deliberately rough (within a small factor of what LibTorch allocates
// for the families here): parameters with their gradients, optimizer state and EMA
// copy; activations kept for the backward pass of one training batch (or of one
// evaluation batch, whichever is larger); and synthetic images generated in memory.
#include <cstdint>
#include <string>

#include "config/config.h"

namespace biaslab {

struct MemoryEstimate {
  double parameters = 0;        ///< estimated parameter count
  double weight_bytes = 0;      ///< parameters, gradients, optimizer state, EMA
  double activation_bytes = 0;  ///< the largest batch's activations (training or evaluation)
  double data_bytes = 0;        ///< images generated in memory (synthetic tasks)
  double total() const { return weight_bytes + activation_bytes + data_bytes; }
};

/// The estimate for `cfg` (training with its optimizer, batch sizes and precision).
MemoryEstimate estimate_memory(const Config& cfg);

/// Memory a run may use: runtime.max_memory_gb when set, else this machine's RAM.
double memory_limit_bytes(const RuntimeConfig& runtime);

/// Throws ConfigError when estimate_memory(cfg) exceeds memory_limit_bytes, naming the
/// estimate's parts and the keys that drive the largest one. Without
/// `activations_in_host_memory` (a CUDA device holds them, or nothing is trained) only
/// the weights and generated data count.
void check_memory_budget(const Config& cfg, bool activations_in_host_memory = true);

}  // namespace biaslab
