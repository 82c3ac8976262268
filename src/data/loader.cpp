#include "data/loader.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "data/transforms.h"

namespace biaslab {
namespace {

// SplitMix64 finaliser: decorrelates nearby (seed, epoch, batch) triples.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Loader::Loader(Split split, LoaderOptions options) : split_(std::move(split)), opt_(std::move(options)) {
  TORCH_CHECK(opt_.batch_size > 0, "batch_size must be positive");
  set_epoch(0);
}

int64_t Loader::batches_per_epoch() const {
  const int64_t n = size();
  if (opt_.drop_last && n >= opt_.batch_size) return n / opt_.batch_size;
  return (n + opt_.batch_size - 1) / opt_.batch_size;
}

void Loader::set_epoch(int64_t epoch) {
  epoch_ = epoch;
  if (opt_.shuffle) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(mix(opt_.seed ^ mix(uint64_t(epoch))));
    order_ = torch::randperm(size(), gen, torch::kLong);
  } else {
    order_ = torch::arange(size(), torch::kLong);
  }
}

Batch Loader::batch(int64_t i) const {
  TORCH_CHECK(i >= 0 && i < batches_per_epoch(), "batch index ", i, " out of range");
  const int64_t start = i * opt_.batch_size;
  const int64_t len = std::min(opt_.batch_size, size() - start);
  auto idx = order_.narrow(0, start, len);
  auto images = split_.images.index_select(0, idx);
  if (opt_.crop_padding > 0 || opt_.hflip) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(
        mix(opt_.seed ^ mix(uint64_t(epoch_) ^ mix(uint64_t(i) + 0x5bd1e995ULL))));
    if (opt_.crop_padding > 0) images = random_crop(images, opt_.crop_padding, gen);
    if (opt_.hflip) images = random_hflip(images, gen);
  }
  return {normalize(images, opt_.mean, opt_.std), split_.labels.index_select(0, idx)};
}

}  // namespace biaslab
