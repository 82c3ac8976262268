#pragma once
// The data loaders of a run, from its config: the training loader (this rank's shard in a
// distributed job) and the validation and test loaders.
#include <memory>

#include "config/config.h"
#include "data/dataset.h"
#include "data/loader.h"

namespace biaslab {

/// Loader options for a split of `data`: evaluation loaders only normalise; training
/// loaders (`train`) shuffle, drop the last short batch, augment and prefetch as configured.
LoaderOptions loader_options(const Config& cfg, const Dataset& data, int64_t batch, bool train);

struct RunLoaders {
  std::unique_ptr<Loader> train, val, test;
  /// train.train_eval_size training images, without augmentation (null when 0).
  std::unique_ptr<Loader> train_eval;
};

/// About `size` images of `train` (each class rounded on its own; all of it when smaller):
/// a stratified sample, the same for every call with the same split (a fixed seed), for
/// train.train_eval_size.
Split train_eval_sample(const Split& train, int64_t size, int64_t num_classes);

/// Training (shard `shard` of `shards`), validation, test and train-eval loaders of `data`.
RunLoaders make_run_loaders(const Config& cfg, const Dataset& data, int shard, int shards);

}  // namespace biaslab
