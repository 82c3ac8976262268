#include "engine/loaders.h"

#include "data/subset.h"

namespace biaslab {

Split train_eval_sample(const Split& train, int64_t size, int64_t num_classes) {
  const int64_t n = train.size();
  if (n <= size) return train;
  SubsetSpec spec;
  spec.fraction = double(size) / double(n);
  // A fixed draw (its own seed, not the run's): the same images at every evaluation.
  const torch::Tensor idx = stratified_subset(train.labels, num_classes, 0x747261696e5f6576ULL, spec).train;
  return {train.images.index_select(0, idx), train.labels.index_select(0, idx)};
}

LoaderOptions loader_options(const Config& cfg, const Dataset& data, int64_t batch, bool train) {
  const DataConfig& d = cfg.data;
  LoaderOptions o;
  o.batch_size = batch;
  o.shuffle = train;
  o.drop_last = train;
  o.seed = uint64_t(cfg.runtime.seed);
  o.mean = data.mean;
  o.std = data.std;
  if (!train) return o;
  o.resized_crop = d.random_resized_crop;
  o.crop_padding = d.crop_padding;
  o.hflip = d.hflip;
  o.trivial_augment = d.trivial_augment;
  o.random_erasing = d.random_erasing;
  o.mixup_alpha = d.mixup_alpha;
  o.cutmix_alpha = d.cutmix_alpha;
  o.num_classes = d.num_classes;
  o.workers = d.workers;
  return o;
}

RunLoaders make_run_loaders(const Config& cfg, const Dataset& data, int shard, int shards) {
  LoaderOptions train_options = loader_options(cfg, data, cfg.train.batch_size, true);
  if (shards > 1) {
    train_options.shard = shard;
    train_options.shards = shards;
  }
  RunLoaders out;
  out.train = std::make_unique<Loader>(data.train, train_options);
  out.val = std::make_unique<Loader>(data.val, loader_options(cfg, data, cfg.train.eval_batch_size, false));
  out.test = std::make_unique<Loader>(data.test, loader_options(cfg, data, cfg.train.eval_batch_size, false));
  if (cfg.train.train_eval_size > 0)
    out.train_eval = std::make_unique<Loader>(train_eval_sample(data.train, cfg.train.train_eval_size, cfg.data.num_classes),
                                              loader_options(cfg, data, cfg.train.eval_batch_size, false));
  return out;
}

}  // namespace biaslab
