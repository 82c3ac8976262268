#pragma once
// Which of biaslab's fused CPU kernels ran, and on which path, since the log was last
// cleared: `bench` prints it, so a figure says what produced it (runtime.kernels picks by
// layer, precision and CPU; docs/performance.md). Each kernel notes itself once per
// forward call (its backward takes the same path); process-wide and thread-safe.
#include <string>
#include <vector>

namespace biaslab::kernel_log {

/// Records that `kernel` ran on `path` (e.g. "attention", "bf16, AVX512-BF16").
void note(const char* kernel, const char* path);

/// "kernel (path)" for every kernel and path noted since clear(), sorted.
std::vector<std::string> ran();

void clear();

}  // namespace biaslab::kernel_log
