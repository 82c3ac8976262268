#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <torch/torch.h>

#include "core/opencv_support.h"
#include "core/errors.h"
#include "config/loader.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;

namespace {

// 4x4 images, `per_class` of each of two classes; pixel value = class * 100 + index.
DataConfig write_dataset(const TempDir& dir, int64_t per_class) {
  const int64_t n = 2 * per_class;
  auto labels = torch::arange(n, torch::kLong).remainder(2);
  auto images = (labels * 100 + torch::arange(n, torch::kLong)).view({n, 1, 1, 1}).expand({n, 1, 4, 4});
  write_idx_images((dir / "train-img.gz").string(), images.to(torch::kUInt8).contiguous());
  write_idx_labels((dir / "train-lbl.gz").string(), labels);
  write_idx_images((dir / "test-img").string(), images.to(torch::kUInt8).contiguous());
  write_idx_labels((dir / "test-lbl").string(), labels);
  DataConfig c;
  c.root = dir.path().string();
  c.train_images = "train-img.gz";
  c.train_labels = "train-lbl.gz";
  c.test_images = "test-img";
  c.test_labels = "test-lbl";
  c.image_size = 4;
  c.channels = 1;
  c.num_classes = 2;
  c.mean = {0.5};
  c.std = {0.5};
  return c;
}

std::string data_error(const DataConfig& c) {
  try {
    load_dataset(c);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError";
  return "";
}

}  // namespace

TEST(Dataset, LoadsSplitsResizesAndConvertsChannels) {
  TempDir dir;
  DataConfig c = write_dataset(dir, 10);
  c.val_fraction = 0.2;
  c.train_fraction = 0.5;
  c.image_size = kWithOpenCV ? 8 : 4;  // resized from 4 (needs OpenCV: opencv_support_test.cpp)
  c.channels = 3;
  c.mean = c.std = {0.5, 0.5, 0.5};
  Dataset d = load_dataset(c);
  EXPECT_EQ(d.val.size(), 4);     // 2 per class
  EXPECT_EQ(d.train.size(), 8);   // half of the remaining 8 per class
  EXPECT_EQ(d.test.size(), 20);
  EXPECT_EQ(d.train.images.sizes(), (torch::IntArrayRef{8, 3, c.image_size, c.image_size}));
  // A constant image stays constant through the resize and the channel copy.
  auto img = d.train.images[0];
  EXPECT_EQ(img.min().item<int64_t>(), img.max().item<int64_t>());
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"0", "1"}));
}

TEST(Dataset, EmptySplitsAreDataErrors) {
  TempDir dir;
  DataConfig c = write_dataset(dir, 3);
  c.val_fraction = 0.9;  // rounds to all 3 images of each class
  EXPECT_NE(data_error(c).find("no training images left"), std::string::npos);
  c.val_fraction = 0.1;  // rounds to 0 per class
  EXPECT_NE(data_error(c).find("rounds to an empty validation split"), std::string::npos);
}

TEST(Dataset, LabelOutOfRangeAndCountMismatch) {
  TempDir dir;
  DataConfig c = write_dataset(dir, 3);
  write_idx_labels((dir / "train-lbl.gz").string(), torch::tensor({0, 1, 5, 0, 1, 0}, torch::kLong));
  EXPECT_NE(data_error(c).find("label 5 is out of range for data.num_classes = 2"), std::string::npos);
  write_idx_labels((dir / "train-lbl.gz").string(), torch::tensor({0, 1}, torch::kLong));
  EXPECT_NE(data_error(c).find("holds 6 images but"), std::string::npos);
  write_idx_images((dir / "train-img.gz").string(), torch::zeros({0, 1, 4, 4}, torch::kUInt8));
  write_idx_labels((dir / "train-lbl.gz").string(), torch::zeros({0}, torch::kLong));
  EXPECT_NE(data_error(c).find("train-img.gz: implausible image count 0"), std::string::npos) << data_error(c);
  c.root = (dir / "nope").string();
  EXPECT_NE(data_error(c).find("is not a folder"), std::string::npos);
}

// summary.json's data.subset_fingerprint: the same subset draw gives the same fingerprint,
// another subset seed, size or validation share another one.
TEST(Dataset, SubsetFingerprintNamesTheImagesDrawn) {
  TempDir dir;
  DataConfig c = write_dataset(dir, 20);
  c.train_fraction = 0.5;
  c.val_fraction = 0.2;
  const std::string first = load_dataset(c).subset_fingerprint;
  EXPECT_EQ(first.size(), 16u);
  EXPECT_EQ(load_dataset(c).subset_fingerprint, first);
  DataConfig other_seed = c;
  other_seed.subset_seed = 1;
  EXPECT_NE(load_dataset(other_seed).subset_fingerprint, first);
  DataConfig other_size = c;
  other_size.train_fraction = 1.0;
  EXPECT_NE(load_dataset(other_size).subset_fingerprint, first);
  DataConfig no_val = c;
  no_val.val_fraction = 0.0;
  EXPECT_NE(load_dataset(no_val).subset_fingerprint, first);
}

namespace {

// The images of a split by their identity (write_dataset: pixel value = class * 100 + index).
std::set<int64_t> ids(const Split& s) {
  std::set<int64_t> out;
  for (int64_t i = 0; i < s.size(); ++i) out.insert(s.images[i][0][0][0].item<int64_t>());
  return out;
}

}  // namespace

// Through the whole data pipeline, from a config as `train` reads it: the training
// subsets of one subset seed are nested across sizes, the validation split is the same
// at every size and disjoint from training, and runtime.seed (initialisation and order)
// changes neither; data.subset_seed changes both.
TEST(Dataset, NestedSubsetsThroughThePipeline) {
  TempDir dir;
  const DataConfig files = write_dataset(dir, 40);
  const auto config = [&](const std::string& fraction, const std::string& runtime_seed, const std::string& subset_seed,
                          const std::string& validation) {
    const std::string yaml = "model: {preset: resnet20}\ndata: {root: " + files.root + ", train_images: " +
                             files.train_images + ", train_labels: " + files.train_labels + ", test_images: " +
                             files.test_images + ", test_labels: " + files.test_labels +
                             ", image_size: 4, channels: 1, num_classes: 2, mean: [0.5], std: [0.5], train_fraction: " +
                             fraction + ", subset_seed: " + subset_seed + ", " + validation + "}\nruntime: {seed: " +
                             runtime_seed + "}\n";
    return load_config_text(yaml, "nested.yaml");
  };
  for (const std::string validation : {"val_fraction: 0.25", "val_per_class: 5"}) {
    SCOPED_TRACE(validation);
    std::vector<std::set<int64_t>> train;
    std::set<int64_t> val;
    for (const std::string fraction : {"0.1", "0.3", "1.0"}) {
      const Dataset d = load_dataset(config(fraction, "0", "0", validation).data);
      train.push_back(ids(d.train));
      if (val.empty()) val = ids(d.val);
      EXPECT_EQ(ids(d.val), val) << "the validation split changed with the size";
      for (int64_t id : ids(d.train)) EXPECT_EQ(val.count(id), 0u) << "image " << id << " is in both splits";
      // runtime.seed draws nothing.
      const Dataset other_runtime = load_dataset(config(fraction, "7", "0", validation).data);
      EXPECT_EQ(ids(other_runtime.train), ids(d.train));
      EXPECT_EQ(ids(other_runtime.val), val);
    }
    ASSERT_FALSE(val.empty());
    EXPECT_LT(train[0].size(), train[1].size());
    EXPECT_LT(train[1].size(), train[2].size());
    for (size_t i = 0; i + 1 < train.size(); ++i)
      EXPECT_TRUE(std::includes(train[i + 1].begin(), train[i + 1].end(), train[i].begin(), train[i].end()))
          << "the subsets are not nested";
    // Another subset seed draws other images.
    EXPECT_NE(ids(load_dataset(config("0.3", "0", "1", validation).data).train), train[1]);
  }
}

