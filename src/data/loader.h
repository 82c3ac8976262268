#pragma once
// Deterministic batch loader over an in-memory Split.
//
// The order of epoch e and the augmentation of batch i in epoch e depend only on
// (seed, e, i): any batch can be recomputed on its own (exact resume), and background
// workers preparing batches ahead give the same batches as the caller's thread would.
// Randomness is drawn per batch rather than per sample: which samples form batch i is
// itself a function of (seed, e), so nothing depends on the number of workers.
#include <torch/types.h>

#include <memory>
#include <vector>

#include "data/dataset.h"

namespace biaslab {

struct LoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = false;
  bool drop_last = false;      ///< drop the last short batch (training)
  uint64_t seed = 0;
  // Augmentation, in this order (all off by default):
  std::vector<double> resized_crop;  ///< [min, max] area share of a random resized crop; empty = off
  int64_t crop_padding = 0;    ///< random crop after zero padding; 0 = off
  bool hflip = false;
  bool trivial_augment = false;
  std::vector<double> mean;    ///< per channel, [0, 1] scale (normalisation)
  std::vector<double> std;
  double random_erasing = 0.0; ///< probability per image, on the normalised image
  double mixup_alpha = 0.0;    ///< > 0: Mixup with Beta(alpha, alpha)
  double cutmix_alpha = 0.0;   ///< > 0: CutMix with Beta(alpha, alpha)
  int64_t num_classes = 0;     ///< for the soft targets of Mixup / CutMix
  int64_t workers = 0;         ///< background threads preparing the next batches; 0 = none
  // Data-parallel training: batch i is part `shard` of `shards` of the global batch i
  // (contiguous slices, sizes differing by at most one), cut after augmentation and
  // Mixup/CutMix of the whole global batch, so the shards together are exactly the
  // single-process batch.
  int64_t shard = 0;
  int64_t shards = 1;
};

struct Batch {
  torch::Tensor images;   ///< float (B, C, H, W), normalised
  torch::Tensor labels;   ///< int64 (B)
  torch::Tensor targets;  ///< float (B, num_classes) soft targets with Mixup/CutMix; else undefined
};

class Loader {
 public:
  Loader(Split split, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  int64_t size() const { return split_.size(); }  ///< of the whole split, not of one shard
  int64_t batches_per_epoch() const;
  /// Selects the sample order of `epoch` (a no-op without shuffle).
  void set_epoch(int64_t epoch);
  /// Batch `i` of the current epoch, augmented and normalised. With workers, the next
  /// batches are prepared in the background while the caller works on this one.
  Batch batch(int64_t i);
  const LoaderOptions& options() const { return opt_; }

 private:
  Batch make_batch(const torch::Tensor& order, int64_t epoch, int64_t i) const;

  Split split_;
  LoaderOptions opt_;
  int64_t epoch_ = 0;
  torch::Tensor order_;  // int64 (N)
  struct Prefetch;
  std::unique_ptr<Prefetch> prefetch_;  // null without workers
};

}  // namespace biaslab
