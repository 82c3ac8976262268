#pragma once
// Evaluation: mean cross-entropy and top-1 accuracy over a whole loader.
#include <c10/core/Device.h>

#include <string>

#include "data/loader.h"
#include "models/classifier.h"

namespace biaslab {

struct EvalMetrics {
  double loss = 0.0;      ///< mean cross-entropy (no label smoothing)
  double accuracy = 0.0;  ///< top-1, in [0, 1]
  int64_t count = 0;
};

/// Runs `model` in eval mode (restoring its mode after) over every batch of `loader`.
EvalMetrics evaluate(Classifier& model, Loader& loader, c10::Device device, const std::string& precision);

}  // namespace biaslab
