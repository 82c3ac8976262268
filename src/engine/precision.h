#pragma once
// Mixed precision: `train.precision: bf16` (or fp16 on CUDA) runs forward passes under
// autocast; `auto` (the default) picks bf16 where the hardware computes in it natively.
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace biaslab {

/// train.precision resolved for `device`: "auto" -> "bf16" on CUDA and on CPUs with
/// bf16 dot-product instructions (AVX512-BF16 or AMX-BF16; bf16 then trains ViTs ~6x
/// faster than fp32 at the same accuracy, docs/performance.md), "fp32" on other CPUs
/// (where bf16 is emulated and slower); other values as they are.
std::string resolve_precision(const std::string& precision, c10::Device device);

/// ConfigError unless `precision` (resolved) can run on `device`: fp16 needs CUDA (its
/// loss scaling and kernels); `hint` says what to do instead.
void require_precision_device(const std::string& precision, c10::Device device, const std::string& hint);

/// Whether this CPU has bf16 dot-product instructions (Linux: /proc/cpuinfo flags).
bool cpu_has_native_bf16();

/// Enables autocast for the scope for "bf16" / "fp16" ("auto" resolved as above); a
/// no-op for "fp32".
class AutocastScope {
 public:
  AutocastScope(const std::string& precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool was_enabled_ = false;
  c10::DeviceType device_;
  c10::ScalarType dtype_ = c10::ScalarType::BFloat16;
};

}  // namespace biaslab
