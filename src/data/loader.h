#pragma once
// Deterministic batch loader over an in-memory Split.
//
// The order of epoch e and the augmentation of batch i in epoch e depend only on
// (seed, e, i), so any batch can be recomputed on its own (exact resume).
#include <torch/types.h>

#include <vector>

#include "data/dataset.h"

namespace biaslab {

struct LoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = false;
  bool drop_last = false;      ///< drop the last short batch (training)
  uint64_t seed = 0;
  int64_t crop_padding = 0;    ///< 0 = no random crop
  bool hflip = false;
  std::vector<double> mean;    ///< per channel, [0, 1] scale
  std::vector<double> std;
};

struct Batch {
  torch::Tensor images;  ///< float (B, C, H, W), normalised
  torch::Tensor labels;  ///< int64 (B)
};

class Loader {
 public:
  Loader(Split split, LoaderOptions options);

  int64_t size() const { return split_.size(); }
  int64_t batches_per_epoch() const;
  /// Selects the sample order of `epoch` (a no-op without shuffle).
  void set_epoch(int64_t epoch);
  /// Batch `i` of the current epoch, augmented and normalised.
  Batch batch(int64_t i) const;

 private:
  Split split_;
  LoaderOptions opt_;
  int64_t epoch_ = 0;
  torch::Tensor order_;  // int64 (N)
};

}  // namespace biaslab
