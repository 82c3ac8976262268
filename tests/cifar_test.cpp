#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>

#include "core/opencv_support.h"
#include "core/errors.h"
#include "data/cifar.h"
#include "data/dataset.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;

namespace {
Split random_split(int64_t n, int64_t classes, int seed) {
  torch::manual_seed(seed);
  return {torch::randint(0, 256, {n, 3, 32, 32}).to(torch::kUInt8), torch::randint(0, classes, {n}).to(torch::kLong)};
}
}  // namespace

TEST(Cifar, Cifar10RecordsAcrossFiles) {
  TempDir dir;
  auto a = random_split(5, 10, 1), b = random_split(3, 10, 2);
  write_cifar((dir / "data_batch_1.bin").string(), a, cifar_layout("cifar10", "fine"));
  write_cifar((dir / "data_batch_2.bin").string(), b, cifar_layout("cifar10", "fine"));
  auto s = read_cifar({(dir / "data_batch_1.bin").string(), (dir / "data_batch_2.bin").string()},
                      cifar_layout("cifar10", "fine"));
  EXPECT_TRUE(torch::equal(s.images, torch::cat({a.images, b.images})));
  EXPECT_TRUE(torch::equal(s.labels, torch::cat({a.labels, b.labels})));
  // Planes are R, G, B of a row-major 32 x 32 image: byte 1 + 1024 + 33 is G at (1, 1).
  std::ifstream in((dir / "data_batch_1.bin").string(), std::ios::binary);
  std::vector<char> bytes(3073);
  in.read(bytes.data(), 3073);
  EXPECT_EQ(uint8_t(bytes[1 + 1024 + 33]), a.images[0][1][1][1].item<uint8_t>());
  EXPECT_EQ(uint8_t(bytes[0]), a.labels[0].item<int64_t>());
}

TEST(Cifar, Cifar100FineOrCoarseLabel) {
  TempDir dir;
  auto fine = random_split(4, 100, 3);
  auto coarse = torch::randint(0, 20, {4}).to(torch::kLong);
  write_cifar((dir / "train.bin").string(), fine, cifar_layout("cifar100", "fine"), coarse);
  EXPECT_TRUE(torch::equal(read_cifar({(dir / "train.bin").string()}, cifar_layout("cifar100", "fine")).labels, fine.labels));
  EXPECT_TRUE(torch::equal(read_cifar({(dir / "train.bin").string()}, cifar_layout("cifar100", "coarse")).labels, coarse));
}

TEST(Cifar, DatasetThroughTheConfigAndItsErrors) {
  TempDir dir;
  write_cifar((dir / "train.bin").string(), random_split(20, 10, 4), cifar_layout("cifar100", "fine"));
  write_cifar((dir / "test.bin").string(), random_split(10, 10, 5), cifar_layout("cifar100", "fine"));
  DataConfig c;
  c.format = "cifar100";
  c.root = dir.path().string();
  c.image_size = kWithOpenCV ? 16 : 32;  // resized (needs OpenCV: opencv_support_test.cpp)
  c.channels = 1;     // converted to luma
  c.num_classes = 10;
  c.mean = {0.5};
  c.std = {0.5};
  auto ds = load_dataset(c);
  EXPECT_EQ(ds.train.images.sizes(), (torch::IntArrayRef{20, 1, c.image_size, c.image_size}));
  EXPECT_EQ(ds.test.size(), 10);
  // A label beyond data.num_classes, a truncated file, a missing file.
  c.num_classes = 5;
  try {
    load_dataset(c);
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("out of range for data.num_classes = 5"), std::string::npos) << e.what();
  }
  c.num_classes = 10;
  std::filesystem::resize_file(dir / "test.bin", 3 * 3074 - 100);
  try {
    load_dataset(c);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("test.bin: 9122 bytes is not a whole number of 3074-byte CIFAR records"),
              std::string::npos) << e.what();
  }
  std::filesystem::remove(dir / "test.bin");
  EXPECT_THROW(load_dataset(c), DataError);
}
