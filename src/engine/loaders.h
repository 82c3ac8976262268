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
};

/// Training (shard `shard` of `shards`), validation and test loaders of `data`.
RunLoaders make_run_loaders(const Config& cfg, const Dataset& data, int shard, int shards);

}  // namespace biaslab
