#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/loader.h"

using namespace biaslab;

namespace {
Split make_split(int64_t n) {
  auto images = torch::arange(n, torch::kLong).view({n, 1, 1, 1}).expand({n, 1, 6, 6}).to(torch::kUInt8).contiguous();
  return {images, torch::arange(n, torch::kLong)};
}
LoaderOptions opts(bool shuffle) {
  LoaderOptions o;
  o.batch_size = 4;
  o.shuffle = shuffle;
  o.seed = 9;
  o.mean = {0.0};
  o.std = {1.0};
  return o;
}
}  // namespace

TEST(Loader, CoversEverySampleOncePerEpoch) {
  Loader loader(make_split(10), opts(true));
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  std::vector<int64_t> seen;
  for (int64_t i = 0; i < loader.batches_per_epoch(); ++i) {
    auto b = loader.batch(i);
    for (int64_t j = 0; j < b.labels.size(0); ++j) seen.push_back(b.labels[j].item<int64_t>());
    // Image pixels still belong to their label after shuffling.
    EXPECT_TRUE(torch::allclose(b.images.select(1, 0).select(1, 0).select(1, 0) * 255.0, b.labels.to(torch::kFloat)));
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(Loader, DropLast) {
  auto o = opts(true);
  o.drop_last = true;
  Loader loader(make_split(10), o);
  EXPECT_EQ(loader.batches_per_epoch(), 2);
}

TEST(Loader, OrderDependsOnSeedAndEpochOnly) {
  Loader a(make_split(32), opts(true)), b(make_split(32), opts(true));
  a.set_epoch(3);
  b.set_epoch(3);
  EXPECT_TRUE(torch::equal(a.batch(2).labels, b.batch(2).labels));
  b.set_epoch(4);
  EXPECT_FALSE(torch::equal(a.batch(0).labels, b.batch(0).labels) && torch::equal(a.batch(1).labels, b.batch(1).labels));
  Loader plain(make_split(8), opts(false));
  EXPECT_TRUE(torch::equal(plain.batch(1).labels, torch::tensor({4, 5, 6, 7}, torch::kLong)));
}

TEST(Loader, AugmentationIsReproduciblePerBatch) {
  auto o = opts(true);
  o.crop_padding = 2;
  o.hflip = true;
  auto split = make_split(16);
  split.images = torch::randint(0, 255, {16, 1, 6, 6}).to(torch::kUInt8);
  Loader a(split, o), b(split, o);
  a.set_epoch(1);
  b.set_epoch(1);
  auto x = a.batch(1).images;
  EXPECT_EQ(x.sizes(), (torch::IntArrayRef{4, 1, 6, 6}));
  EXPECT_TRUE(torch::equal(x, b.batch(1).images));
}

TEST(Loader, SameBatchesWhateverTheNumberOfWorkers) {
  auto o = opts(true);
  o.crop_padding = 1;
  o.hflip = true;
  o.trivial_augment = true;
  o.random_erasing = 0.5;
  o.mixup_alpha = 0.4;
  o.cutmix_alpha = 1.0;
  o.num_classes = 40;
  auto split = make_split(40);
  split.images = torch::randint(0, 255, {40, 1, 6, 6}).to(torch::kUInt8);
  for (int64_t workers : {1, 3}) {
    auto ow = o;
    ow.workers = workers;
    Loader serial(split, o), parallel(split, ow);
    for (int64_t epoch : {0, 1}) {
      serial.set_epoch(epoch);
      parallel.set_epoch(epoch);
      // In order, then out of order (a resumed epoch starts mid-way).
      for (int64_t i : {0, 1, 2, 3, 4, 5, 6, 7, 9, 8, 2}) {
        auto a = serial.batch(i), b = parallel.batch(i);
        EXPECT_TRUE(torch::equal(a.images, b.images)) << workers << " workers, epoch " << epoch << " batch " << i;
        EXPECT_TRUE(torch::equal(a.labels, b.labels));
        EXPECT_TRUE(torch::equal(a.targets, b.targets));
      }
    }
  }
}

TEST(Loader, EvaluationBatchesAreJustNormalised) {
  auto split = make_split(8);
  Loader plain(split, opts(false));
  auto b = plain.batch(0);
  EXPECT_FALSE(b.targets.defined());
  EXPECT_TRUE(torch::allclose(b.images, split.images.narrow(0, 0, 4).to(torch::kFloat).div(255.0)));
}

TEST(Loader, ShardsTogetherAreTheSingleProcessBatch) {
  for (bool augment : {false, true}) {
    auto o = opts(true);
    o.batch_size = 5;  // 2 shards of 2 and 3, 3 shards of 1, 2, 2
    o.drop_last = true;
    if (augment) {
      o.crop_padding = 1;
      o.hflip = true;
      o.random_erasing = 0.5;
      o.mixup_alpha = 0.4;
      o.num_classes = 23;
    }
    auto split = make_split(23);
    split.images = torch::randint(0, 255, {23, 1, 6, 6}).to(torch::kUInt8);
    Loader whole(split, o);
    for (int64_t shards : {2, 3}) {
      std::vector<std::unique_ptr<Loader>> parts;
      for (int64_t s = 0; s < shards; ++s) {
        auto os = o;
        os.shard = s;
        os.shards = shards;
        os.workers = s;  // workers or not, the same batches
        parts.push_back(std::make_unique<Loader>(split, os));
      }
      for (int64_t epoch : {0, 1}) {
        whole.set_epoch(epoch);
        for (auto& p : parts) p->set_epoch(epoch);
        ASSERT_EQ(parts[0]->batches_per_epoch(), whole.batches_per_epoch());
        for (int64_t i = 0; i < whole.batches_per_epoch(); ++i) {
          auto all = whole.batch(i);
          std::vector<torch::Tensor> images, labels, targets;
          for (auto& p : parts) {
            auto b = p->batch(i);
            EXPECT_GE(b.labels.size(0), 5 / shards);
            EXPECT_LE(b.labels.size(0), 5 / shards + 1);
            images.push_back(b.images);
            labels.push_back(b.labels);
            if (b.targets.defined()) targets.push_back(b.targets);
          }
          EXPECT_TRUE(torch::equal(torch::cat(images), all.images)) << shards << " shards, batch " << i;
          EXPECT_TRUE(torch::equal(torch::cat(labels), all.labels));
          EXPECT_EQ(all.targets.defined(), augment);
          if (augment) {
            EXPECT_TRUE(torch::equal(torch::cat(targets), all.targets));
          }
        }
      }
    }
  }
}
