#include "engine/precision.h"

#include "core/torch_compat.h"

namespace biaslab {

AutocastScope::AutocastScope(const std::string& precision, c10::Device device) : device_(device.type()) {
  TORCH_CHECK(precision == "fp32" || precision == "bf16", "unknown precision '", precision, "'");
  if (precision == "bf16") {
    active_ = true;
    was_enabled_ = compat::set_autocast(device_, true, c10::ScalarType::BFloat16);
  }
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  compat::set_autocast(device_, was_enabled_, c10::ScalarType::BFloat16);
  if (!was_enabled_) compat::clear_autocast_cache();
}

}  // namespace biaslab
