#pragma once
// Process-wide runtime settings: threads, seeding, device selection.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace biaslab {

/// Sets the intra-op thread count; 0 means all cores. Returns the count in effect.
int set_threads(int threads);

/// Seeds torch's global generator (and CUDA's when present).
void seed_everything(uint64_t seed);

/// Parses `auto|cpu|cuda|cuda:N` into a device that exists on this machine;
/// throws ConfigError (naming `key`) for bad values or CUDA asked for without CUDA.
c10::Device select_device(const std::string& spec, const std::string& key = "runtime.device");

/// A host tensor on `device`: as is for the CPU; for CUDA copied from pinned (page-locked)
/// memory without blocking the host, so the copy overlaps the work already queued.
at::Tensor to_device(const at::Tensor& host, const c10::Device& device);

}  // namespace biaslab
