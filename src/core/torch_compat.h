#pragma once
// The one place that knows about LibTorch version differences (1.13 vs 2.x).
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace biaslab::compat {

/// LibTorch version the binary was built against, e.g. "1.13.0".
std::string torch_version();

/// Enables/disables autocast for `device` with `dtype`; returns whether it was enabled.
bool set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype);

/// Drops autocast's cache of casted weights (they change after every optimizer step).
void clear_autocast_cache();

}  // namespace biaslab::compat
