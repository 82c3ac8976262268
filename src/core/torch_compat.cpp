#include "core/torch_compat.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace biaslab::compat {

std::string torch_version() { return TORCH_VERSION; }

bool set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const bool was = at::autocast::is_autocast_enabled(device);
  at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, enabled);
  return was;
#else
  if (device == c10::DeviceType::CUDA) {
    const bool was = at::autocast::is_enabled();
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
    return was;
  }
  const bool was = at::autocast::is_cpu_enabled();
  at::autocast::set_autocast_cpu_dtype(dtype);
  at::autocast::set_cpu_enabled(enabled);
  return was;
#endif
}

std::optional<c10::ScalarType> autocast_dtype(c10::DeviceType device) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  if (!at::autocast::is_autocast_enabled(device)) return std::nullopt;
  return at::autocast::get_autocast_dtype(device);
#else
  if (device == c10::DeviceType::CUDA)
    return at::autocast::is_enabled() ? std::optional(at::autocast::get_autocast_gpu_dtype()) : std::nullopt;
  if (device == c10::DeviceType::CPU)
    return at::autocast::is_cpu_enabled() ? std::optional(at::autocast::get_autocast_cpu_dtype()) : std::nullopt;
  return std::nullopt;
#endif
}

void clear_autocast_cache() { at::autocast::clear_cache(); }

std::string error_message(const std::exception& e) {
  const auto* c = dynamic_cast<const c10::Error*>(&e);
  const std::string what = c ? c->what_without_backtrace() : e.what();
  return what.substr(0, what.find('\n'));
}

bool has_fused_attention() { return TORCH_VERSION_MAJOR >= 2; }

at::Tensor fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                           double dropout_p) {
#if TORCH_VERSION_MAJOR >= 2
  c10::optional<at::Tensor> m;
  if (mask.defined()) m = mask.scalar_type() == at::kBool ? mask : mask.to(q.scalar_type());
  return at::scaled_dot_product_attention(q, k, v, m, dropout_p, /*is_causal=*/false);
#else
  TORCH_CHECK(false, "fused attention needs LibTorch 2.0 or later (this is ", TORCH_VERSION, ")");
#endif
}

}  // namespace biaslab::compat
