#include "data/loader.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "core/seed_mix.h"
#include "data/transforms.h"

namespace biaslab {

// A few persistent threads running batch jobs, and the batches they promised.
struct Loader::Prefetch {
  std::vector<std::thread> threads;
  std::deque<std::function<void()>> jobs;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::map<int64_t, std::future<Batch>> ready;  // batch index (current epoch) -> result

  explicit Prefetch(int64_t n) {
    for (int64_t t = 0; t < n; ++t)
      threads.emplace_back([this] {
        torch::NoGradGuard no_grad;
        while (true) {
          std::function<void()> job;
          {
            std::unique_lock<std::mutex> lock(mutex);
            wake.wait(lock, [this] { return stop || !jobs.empty(); });
            if (stop && jobs.empty()) return;
            job = std::move(jobs.front());
            jobs.pop_front();
          }
          job();
        }
      });
  }
  ~Prefetch() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    for (auto& t : threads) t.join();
  }
  void submit(int64_t i, std::function<Batch()> fn) {
    auto task = std::make_shared<std::packaged_task<Batch()>>(std::move(fn));
    ready.emplace(i, task->get_future());
    {
      std::lock_guard<std::mutex> lock(mutex);
      jobs.emplace_back([task] { (*task)(); });
    }
    wake.notify_one();
  }
};

Loader::Loader(Split split, LoaderOptions options) : split_(std::move(split)), opt_(std::move(options)) {
  TORCH_CHECK(opt_.batch_size > 0, "batch_size must be positive");
  TORCH_CHECK(opt_.shards >= 1 && opt_.shard >= 0 && opt_.shard < opt_.shards, "shard must be in [0, shards)");
  TORCH_CHECK(opt_.resized_crop.empty() || opt_.resized_crop.size() == 2, "resized_crop needs [min, max]");
  TORCH_CHECK((opt_.mixup_alpha <= 0 && opt_.cutmix_alpha <= 0) || opt_.num_classes > 0,
              "Mixup/CutMix need num_classes");
  if (opt_.workers > 0) prefetch_ = std::make_unique<Prefetch>(opt_.workers);
  set_epoch(0);
}

Loader::~Loader() = default;

int64_t Loader::batches_per_epoch() const {
  const int64_t n = size();
  if (opt_.drop_last && n >= opt_.batch_size) return n / opt_.batch_size;
  return (n + opt_.batch_size - 1) / opt_.batch_size;
}

void Loader::set_epoch(int64_t epoch) {
  if (prefetch_) {
    for (auto& [i, f] : prefetch_->ready) f.wait();  // jobs of the old order finish before it changes
    prefetch_->ready.clear();
  }
  epoch_ = epoch;
  if (opt_.shuffle) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(mix_seed(opt_.seed ^ mix_seed(uint64_t(epoch))));
    order_ = torch::randperm(size(), gen, torch::kLong);
  } else {
    order_ = torch::arange(size(), torch::kLong);
  }
}

Batch Loader::batch(int64_t i) {
  TORCH_CHECK(i >= 0 && i < batches_per_epoch(), "batch index ", i, " out of range");
  if (!prefetch_) return make_batch(order_, epoch_, i);
  Batch b;
  auto it = prefetch_->ready.find(i);
  if (it != prefetch_->ready.end()) {
    auto promised = std::move(it->second);
    prefetch_->ready.erase(it);  // before get(): a job that threw must not stay behind
    b = promised.get();
  } else {
    b = make_batch(order_, epoch_, i);
  }
  // Drop promises for batches the caller skipped, then keep `workers` batches in flight.
  for (auto f = prefetch_->ready.begin(); f != prefetch_->ready.end();) {
    if (f->first < i) {
      f->second.wait();
      f = prefetch_->ready.erase(f);
    } else {
      ++f;
    }
  }
  for (int64_t next = i + 1; next <= i + opt_.workers && next < batches_per_epoch(); ++next) {
    if (prefetch_->ready.count(next)) continue;
    const torch::Tensor order = order_;
    const int64_t epoch = epoch_;
    prefetch_->submit(next, [this, order, epoch, next] { return make_batch(order, epoch, next); });
  }
  return b;
}

Batch Loader::make_batch(const torch::Tensor& order, int64_t epoch, int64_t i) const {
  const int64_t start = i * opt_.batch_size;
  const int64_t len = std::min(opt_.batch_size, size() - start);
  // A shard's part of the global batch: samples [lo, hi). Augmentation and Mixup/CutMix
  // apply to the whole global batch before it is cut, so a data-parallel run sees exactly
  // the samples of a single-process run.
  const int64_t lo = len * opt_.shard / opt_.shards, hi = len * (opt_.shard + 1) / opt_.shards;
  auto cut = [&](const torch::Tensor& t) {
    return t.defined() && opt_.shards > 1 ? t.narrow(0, lo, hi - lo).contiguous() : t;
  };
  auto idx = order.narrow(0, start, len);
  const bool augment = !opt_.resized_crop.empty() || opt_.crop_padding > 0 || opt_.hflip || opt_.trivial_augment ||
                       opt_.random_erasing > 0 || opt_.mixup_alpha > 0 || opt_.cutmix_alpha > 0;
  if (!augment) {
    idx = cut(idx);
    return {normalize(split_.images.index_select(0, idx), opt_.mean, opt_.std), split_.labels.index_select(0, idx), {}};
  }
  auto images = split_.images.index_select(0, idx);
  auto labels = split_.labels.index_select(0, idx);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(
      mix_seed(opt_.seed ^ mix_seed(uint64_t(epoch) ^ mix_seed(uint64_t(i) + 0x5bd1e995ULL))));
  if (!opt_.resized_crop.empty()) images = random_resized_crop(images, opt_.resized_crop[0], opt_.resized_crop[1], gen);
  if (opt_.crop_padding > 0) images = random_crop(images, opt_.crop_padding, gen);
  if (opt_.hflip) images = random_hflip(images, gen);
  if (opt_.trivial_augment) images = trivial_augment(images, gen);
  auto x = normalize(images, opt_.mean, opt_.std);
  if (opt_.random_erasing > 0) x = random_erasing(x, opt_.random_erasing, gen);
  torch::Tensor targets;
  if (opt_.mixup_alpha > 0 || opt_.cutmix_alpha > 0)
    std::tie(x, targets) = mix_batch(x, labels, opt_.num_classes, opt_.mixup_alpha, opt_.cutmix_alpha, gen);
  return {cut(x), cut(labels), cut(targets)};
}

}  // namespace biaslab
