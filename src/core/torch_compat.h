#pragma once
// The one place that knows about LibTorch version differences (1.13 vs 2.x).
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <exception>
#include <optional>
#include <string>

namespace biaslab::compat {

/// LibTorch version the binary was built against, e.g. "1.13.0".
std::string torch_version();

/// Enables/disables autocast for `device` with `dtype`; returns whether it was enabled.
bool set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype);

/// The dtype autocast computes in on `device` where it is enabled there; nullopt where not.
std::optional<c10::ScalarType> autocast_dtype(c10::DeviceType device);

/// Drops autocast's cache of casted weights (they change after every optimizer step).
void clear_autocast_cache();

/// The first line of what LibTorch threw: a c10::Error's message without its C++
/// backtrace, or another exception's (e.g. the TorchScript compiler's ErrorReport).
std::string error_message(const std::exception& e);

/// Whether this LibTorch has the fused scaled_dot_product_attention kernels (2.0+).
bool has_fused_attention();

/// softmax(q k^T / sqrt(d) + mask) v by the fused kernels; q, k, v (B, H, N, D); `mask`
/// undefined, bool (true = may attend) or additive float, broadcastable to (B, H, N, N).
/// Only where has_fused_attention(); throws otherwise.
at::Tensor fused_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                           double dropout_p);

}  // namespace biaslab::compat
