// Whether this biaslab was built with OpenCV (CMake option BIASLAB_WITH_OPENCV), and the
// one refusal of what needs it: image folders, decoding image files, resizing images at
// load, PNG plots and `analyze`.
#pragma once
#include <string>

#include "core/errors.h"

#ifndef BIASLAB_WITH_OPENCV
#define BIASLAB_WITH_OPENCV 1
#endif

namespace biaslab {

inline constexpr bool kWithOpenCV = BIASLAB_WITH_OPENCV != 0;

/// Exit 2 (it is the build, not the input, that cannot do it), naming the option.
[[noreturn]] inline void refuse_without_opencv(const std::string& what) {
  throw ConfigError(what + " needs OpenCV, and this biaslab was built without it (-DBIASLAB_WITH_OPENCV=OFF); "
                    "rebuild with -DBIASLAB_WITH_OPENCV=ON (Debian: libopencv-dev) to use it");
}

}  // namespace biaslab
