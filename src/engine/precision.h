#pragma once
// Mixed precision: `train.precision: bf16` runs forward passes under autocast.
#include <c10/core/Device.h>

#include <string>

namespace biaslab {

/// Enables autocast for the scope when `precision` is "bf16"; a no-op for "fp32".
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
};

}  // namespace biaslab
