#include <gtest/gtest.h>
#include <fmt/format.h>
#include <opencv2/imgcodecs.hpp>
#include <torch/torch.h>

#include <filesystem>

#include "core/errors.h"
#include "data/dataset.h"
#include "data/image_folder.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;
namespace fs = std::filesystem;

namespace {
// A colour PNG whose every pixel is (r, g, b).
void write_png(const fs::path& path, int r, int g, int b, int size = 6) {
  fs::create_directories(path.parent_path());
  cv::Mat img(size, size, CV_8UC3, cv::Scalar(b, g, r));  // OpenCV is BGR
  ASSERT_TRUE(cv::imwrite(path.string(), img));
}
std::string data_error(const DataConfig& c) {
  try {
    load_dataset(c);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no DataError";
}
DataConfig folder_config(const TempDir& dir, int64_t classes) {
  DataConfig c;
  c.format = "folder";
  c.root = dir.path().string();
  c.image_size = 4;
  c.channels = 3;
  c.num_classes = classes;
  c.mean = {0.5, 0.5, 0.5};
  c.std = {0.5, 0.5, 0.5};
  return c;
}
}  // namespace

TEST(ImageFolder, ClassesFromSortedFoldersRgbResizedAndOrderedByFileName) {
  TempDir dir;
  write_png(dir / "train" / "zebra" / "a.png", 10, 20, 30);
  write_png(dir / "train" / "apple" / "b.png", 40, 50, 60);
  write_png(dir / "train" / "apple" / "c.jpg", 70, 80, 90);
  write_png(dir / "test" / "zebra" / "x.png", 1, 2, 3);
  write_png(dir / "test" / "apple" / "y.png", 4, 5, 6);
  auto ds = load_dataset(folder_config(dir, 2));
  EXPECT_EQ(ds.class_names, (std::vector<std::string>{"apple", "zebra"}));
  ASSERT_EQ(ds.train.size(), 3);
  EXPECT_EQ(ds.train.images.sizes(), (torch::IntArrayRef{3, 3, 4, 4}));
  // Order by file name: a (zebra), b (apple), c (apple).
  EXPECT_TRUE(torch::equal(ds.train.labels, torch::tensor({1, 0, 0}, torch::kLong)));
  EXPECT_EQ(ds.train.images[0][0][0][0].item<uint8_t>(), 10);  // R first
  EXPECT_EQ(ds.train.images[0][2][0][0].item<uint8_t>(), 30);
  EXPECT_NEAR(ds.train.images[2][1][2][2].item<uint8_t>(), 80, 2);  // JPEG is lossy
  EXPECT_EQ(ds.test.size(), 2);
}

TEST(ImageFolder, WithoutSplitFoldersATestShareIsHeldOut) {
  TempDir dir;
  for (int i = 0; i < 10; ++i) {
    // fmt, not "c" + std::string&&: GCC 12 -O3 warns about that falsely (-Wstringop-overflow).
    write_png(dir / "cat" / fmt::format("c{}.png", i), i, 0, 0);
    write_png(dir / "dog" / fmt::format("d{}.png", i), 0, i, 0);
  }
  auto c = folder_config(dir, 2);
  c.test_holdout = 0.2;
  auto ds = load_dataset(c);
  EXPECT_EQ(ds.test.size(), 4);  // 2 per class
  EXPECT_EQ(ds.train.size(), 16);
  EXPECT_EQ(torch::bincount(ds.test.labels).min().item<int64_t>(), 2);
}

TEST(ImageFolder, BadImagesErrorOrSkipWithAList) {
  TempDir dir;
  write_png(dir / "train" / "a" / "1.png", 1, 1, 1);
  write_png(dir / "train" / "b" / "2.png", 2, 2, 2);
  write_png(dir / "test" / "a" / "3.png", 3, 3, 3);
  write_png(dir / "test" / "b" / "4.png", 4, 4, 4);
  test::write_text(dir / "train" / "b" / "broken.png", "not a png");
  auto c = folder_config(dir, 2);
  const std::string msg = data_error(c);
  EXPECT_NE(msg.find("broken.png: OpenCV cannot decode this image"), std::string::npos) << msg;
  EXPECT_NE(msg.find("data.on_bad_image: skip"), std::string::npos) << msg;
  c.on_bad_image = "skip";
  auto ds = load_dataset(c);
  EXPECT_EQ(ds.train.size(), 2);
  ASSERT_EQ(ds.skipped.size(), 1u);
  EXPECT_NE(ds.skipped[0].find("broken.png"), std::string::npos);
}

TEST(ImageFolder, StructuralErrorsNameTheFolder) {
  TempDir dir;
  auto c = folder_config(dir, 2);
  c.root = (dir / "missing").string();
  EXPECT_NE(data_error(c).find("is not a folder"), std::string::npos);
  write_png(dir / "train" / "a" / "1.png", 1, 1, 1);
  fs::create_directories(dir / "train" / "b");
  c.root = dir.path().string();
  EXPECT_NE(data_error(c).find("b: empty class folder"), std::string::npos) << data_error(c);
  write_png(dir / "train" / "b" / "2.png", 1, 1, 1);
  EXPECT_NE(data_error(c).find("has train/ but no test/"), std::string::npos) << data_error(c);
  write_png(dir / "test" / "a" / "3.png", 1, 1, 1);
  write_png(dir / "test" / "c" / "4.png", 1, 1, 1);
  EXPECT_NE(data_error(c).find("class folders differ"), std::string::npos) << data_error(c);
  c.num_classes = 3;
  fs::remove_all(dir / "test" / "c");
  write_png(dir / "test" / "b" / "4.png", 1, 1, 1);
  EXPECT_NE(data_error(c).find("2 class folders, but data.num_classes is 3"), std::string::npos) << data_error(c);
}

TEST(ImageFolder, WriteThenReadIsExact) {
  TempDir dir;
  torch::manual_seed(0);
  Split s{torch::randint(0, 256, {7, 1, 5, 5}).to(torch::kUInt8), torch::tensor({2, 0, 1, 2, 0, 1, 1}, torch::kLong)};
  write_image_folder((dir / "out").string(), s, {"x/y", "b", "a"});
  EXPECT_TRUE(fs::exists(dir / "out" / "0_x_y" / "000001.png"));  // label prefix keeps the label order
  FolderReadOptions o;
  o.channels = 1;
  o.image_size = 5;
  auto back = read_image_folder((dir / "out").string(), o);
  EXPECT_EQ(back.class_names, (std::vector<std::string>{"0_x_y", "1_b", "2_a"}));
  EXPECT_TRUE(torch::equal(back.split.images, s.images));
  EXPECT_TRUE(torch::equal(back.split.labels, s.labels));
}
