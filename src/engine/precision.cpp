#include "engine/precision.h"

#include "core/cpu_info.h"
#include "core/errors.h"
#include "core/torch_compat.h"

namespace biaslab {

void require_precision_device(const std::string& precision, c10::Device device, const std::string& hint) {
  if (precision == "fp16" && !device.is_cuda())
    throw ConfigError("train.precision: fp16 needs a CUDA device, runtime.device resolved to " + device.str() + "; " +
                      hint);
}

bool cpu_has_native_bf16() {
  const CpuInfo& cpu = cpu_info();
  return cpu.has("avx512_bf16") || cpu.has("amx_bf16");
}

std::string resolve_precision(const std::string& precision, c10::Device device) {
  if (precision != "auto") return precision;
  return device.is_cuda() || cpu_has_native_bf16() ? "bf16" : "fp32";
}

AutocastScope::AutocastScope(const std::string& precision, c10::Device device) : device_(device.type()) {
  const std::string p = resolve_precision(precision, device);
  TORCH_CHECK(p == "fp32" || p == "bf16" || p == "fp16", "unknown precision '", precision, "'");
  if (p == "fp32") return;
  active_ = true;
  dtype_ = p == "bf16" ? c10::ScalarType::BFloat16 : c10::ScalarType::Half;
  was_enabled_ = compat::set_autocast(device_, true, dtype_);
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  compat::set_autocast(device_, was_enabled_, dtype_);
  if (!was_enabled_) compat::clear_autocast_cache();
}

}  // namespace biaslab
