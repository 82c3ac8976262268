// What needs OpenCV works in a build with it and is refused, with exit 2 and a message
// naming -DBIASLAB_WITH_OPENCV=OFF, in a build without it (scripts/device_rehearsal.sh
// builds one); the synthetic tasks work in both (synthetic_test.cpp).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "core/errors.h"
#include "core/opencv_support.h"
#include "data/dataset.h"
#include "data/image_folder.h"
#include "plot/chart.h"
#include "plot/tiles.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;
namespace fs = std::filesystem;

namespace {

// Runs f; in a build without OpenCV expects the refusal (a ConfigError naming the option
// and `what`), in one with OpenCV expects no exception.
template <typename F>
void needs_opencv(const std::string& what, F&& f) {
  if (kWithOpenCV) {
    EXPECT_NO_THROW(f()) << what;
    return;
  }
  try {
    f();
    ADD_FAILURE() << what << ": not refused in a build without OpenCV";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("-DBIASLAB_WITH_OPENCV=OFF"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(OpenCVSupport, ResizingAtLoad) {
  const auto images = torch::randint(0, 256, {2, 1, 28, 28}, torch::kUInt8);
  needs_opencv("resizing its 28x28 images to data.image_size 32", [&] {
    EXPECT_EQ(conform_images(images, 1, 32, "t10k-images").sizes(), torch::IntArrayRef({2, 1, 32, 32}));
  });
  // Images already of the configured size need nothing.
  EXPECT_TRUE(torch::equal(conform_images(images, 1, 28, "t10k-images"), images));
}

TEST(OpenCVSupport, ImageFoldersAndDecoding) {
  TempDir dir;
  Split split{torch::randint(0, 256, {4, 3, 8, 8}, torch::kUInt8), torch::tensor({0, 1, 0, 1}, torch::kLong)};
  const std::string root = (dir.path() / "folder").string();
  needs_opencv("writing an image folder", [&] { write_image_folder(root, split, {"a", "b"}); });
  if (!kWithOpenCV) {
    EXPECT_FALSE(fs::exists(root)) << "a refused write must leave nothing behind";
  }
  FolderReadOptions o;
  o.image_size = 8;
  needs_opencv("reading an image folder", [&] { EXPECT_EQ(read_image_folder(root, o).split.size(), 4); });
  auto out = torch::empty({3, 8, 8}, torch::kUInt8);
  const std::string png = (fs::path(root) / class_folder_name(0, 2, "a") / "000000.png").string();
  needs_opencv("decoding image files", [&] { EXPECT_TRUE(decode_image(png, o, out)); });
}

TEST(OpenCVSupport, Plots) {
  TempDir dir;
  plot::LineChart chart;
  chart.title = "t";
  chart.lines.push_back({"a", {1, 2}, {3, 4}, {}});
  needs_opencv("drawing", [&] { plot::draw(chart, dir.path() / "line.png"); });
  plot::TileGrid grid;
  grid.tiles.push_back({torch::zeros({1, 4, 4}, torch::kUInt8), {}, "x"});
  needs_opencv("drawing", [&] { plot::draw(grid, dir.path() / "tiles.png"); });
  EXPECT_EQ(fs::exists(dir.path() / "line.png"), kWithOpenCV);
  EXPECT_EQ(fs::exists(dir.path() / "tiles.png"), kWithOpenCV);
}
