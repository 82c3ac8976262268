#pragma once
// Evaluation: mean cross-entropy, top-1 and (over more than 5 classes) top-5 accuracy
// over a whole loader.
#include <c10/core/Device.h>

#include <limits>
#include <string>

#include "data/loader.h"
#include "models/classifier.h"

namespace biaslab {
namespace dist {
class Communicator;
}

struct EvalMetrics {
  double loss = 0.0;      ///< mean cross-entropy (no label smoothing)
  double accuracy = 0.0;  ///< top-1, in [0, 1]
  /// Top-5, in [0, 1]; NaN when the model has 5 classes or fewer (it would always be 1).
  double top5 = std::numeric_limits<double>::quiet_NaN();
  int64_t count = 0;
};

/// Loss and correct-prediction sums of evaluation batches, kept on the device (no host sync).
struct EvalSums {
  explicit EvalSums(c10::Device device);
  torch::Tensor loss_sum;  ///< float64, summed cross-entropy (no label smoothing)
  torch::Tensor correct;   ///< int64
  torch::Tensor correct5;  ///< int64: label among the 5 largest logits (more than 5 classes)
  bool has_top5 = false;   ///< set by the first batch with more than 5 classes
};

/// Whether top-5 accuracy means anything for `num_classes` classes.
inline bool reports_top5(int64_t num_classes) { return num_classes > 5; }

/// What evaluation does with one batch (`model` already in eval mode, under no_grad): the
/// forward pass under autocast for `precision`, then adds its sums to `sums`. Shared with
/// `biaslab bench`, so the benchmark times exactly what evaluation runs.
void accumulate_eval_batch(Classifier& model, const torch::Tensor& x, const torch::Tensor& y, c10::Device device,
                           const std::string& precision, EvalSums& sums);

/// Runs `model` in eval mode (restoring its mode after) over every batch of `loader`.
/// With `comm`, rank r evaluates batches r, r + W, ... and the sums are all-reduced: the
/// same batches as one process, each sample once, so the accuracy is the single-process one.
EvalMetrics evaluate(Classifier& model, Loader& loader, c10::Device device, const std::string& precision,
                     dist::Communicator* comm = nullptr);

}  // namespace biaslab
