#pragma once
// A model's anatomy, stage by stage (Classifier::stages): output shape per image,
// parameters, multiply-accumulates per image (core/flop_counter.h) and the theoretical
// receptive field in input pixels. The receptive field follows the main path: each
// k x k convolution or pooling of stride s (dilation d) adds (k - 1) d x jump pixels and
// multiplies the jump by s; shortcut projections add nothing; a local attention window
// of k patches acts as a k x k stride-1 convolution on the token grid; global attention
// and global pooling make it global.
#include <cstdint>
#include <string>
#include <vector>

#include "models/classifier.h"

namespace biaslab {

struct StageSummary {
  std::string name;
  std::vector<int64_t> output_shape;  ///< per image (without the batch dimension)
  int64_t parameters = 0;
  int64_t macs = 0;                   ///< per image
  int64_t receptive_field = 0;        ///< pixels of the input; kGlobal when every pixel can matter
  static constexpr int64_t kGlobal = -1;
};

struct ModelSummary {
  std::vector<StageSummary> stages;
  int64_t parameters = 0;
  int64_t macs = 0;
};

/// Runs one `channels x image_size x image_size` image through the stages in eval mode
/// (the model's training flag is restored).
ModelSummary summarize(Classifier& model, int64_t channels, int64_t image_size);

}  // namespace biaslab
