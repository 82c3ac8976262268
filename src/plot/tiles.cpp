#include "plot/tiles.h"

#include <torch/torch.h>

#include <algorithm>

#include "core/errors.h"
#include "core/opencv_support.h"
#if BIASLAB_WITH_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace biaslab::plot {
#if BIASLAB_WITH_OPENCV
namespace {

constexpr int kLabelH = 16, kTitleH = 28, kRowLabelW = 90, kGap = 4;

cv::Mat to_bgr(const torch::Tensor& chw_u8, int side) {
  auto t = chw_u8.to(torch::kUInt8).contiguous();
  const int c = int(t.size(0)), h = int(t.size(1)), w = int(t.size(2));
  cv::Mat img;
  if (c == 1) {
    cv::Mat grey(h, w, CV_8UC1, t.data_ptr<uint8_t>());
    cv::cvtColor(grey, img, cv::COLOR_GRAY2BGR);
  } else {
    auto hwc = t.permute({1, 2, 0}).contiguous();
    cv::Mat rgb(h, w, CV_8UC3, hwc.data_ptr<uint8_t>());
    cv::cvtColor(rgb, img, cv::COLOR_RGB2BGR);
  }
  cv::resize(img, img, cv::Size(side, side), 0, 0, cv::INTER_NEAREST);
  return img;
}

cv::Mat heat_bgr(const torch::Tensor& heat, int side) {
  auto h = heat.to(torch::kFloat).contiguous();
  const float lo = h.min().item<float>(), hi = h.max().item<float>();
  auto scaled = ((h - lo) / std::max(hi - lo, 1e-12f) * 255.0).clamp(0, 255).to(torch::kUInt8).contiguous();
  cv::Mat m(int(h.size(0)), int(h.size(1)), CV_8UC1, scaled.data_ptr<uint8_t>());
  cv::Mat big, colour;
  cv::resize(m, big, cv::Size(side, side), 0, 0, cv::INTER_NEAREST);
  cv::applyColorMap(big, colour, cv::COLORMAP_INFERNO);
  return colour;
}

void text(cv::Mat& canvas, const std::string& s, int x, int y, double scale) {
  cv::putText(canvas, s, cv::Point(x, y), cv::FONT_HERSHEY_SIMPLEX, scale, cv::Scalar(20, 20, 20), 1, cv::LINE_AA);
}

}  // namespace
#endif

torch::Tensor to_image(const torch::Tensor& values, bool signed_range) {
  auto v = values.detach().to(torch::kFloat);
  torch::Tensor scaled;
  if (signed_range) {
    const float m = std::max(v.abs().max().item<float>(), 1e-12f);
    scaled = (v / m * 127.5 + 127.5);
  } else {
    const float lo = v.min().item<float>(), hi = v.max().item<float>();
    scaled = (v - lo) / std::max(hi - lo, 1e-12f) * 255.0;
  }
  return scaled.clamp(0, 255).round().to(torch::kUInt8);
}

#if !BIASLAB_WITH_OPENCV
void draw(const TileGrid& g, const std::filesystem::path& png) { refuse_without_opencv("drawing " + png.string()); }
#else
void draw(const TileGrid& g, const std::filesystem::path& png) {
  const int cols = int(std::max<int64_t>(1, g.cols)), side = int(g.cell_px);
  const int rows = int((g.tiles.size() + size_t(cols) - 1) / size_t(cols));
  const int left = g.row_labels.empty() ? kGap : kRowLabelW;
  const int cell_h = side + kLabelH + kGap;
  int baseline = 0;
  const int title_w = cv::getTextSize(g.title, cv::FONT_HERSHEY_SIMPLEX, 0.5, 1, &baseline).width + 2 * kGap;
  cv::Mat canvas(kTitleH + rows * cell_h + kGap, std::max(left + cols * (side + kGap), title_w), CV_8UC3,
                 cv::Scalar(255, 255, 255));
  text(canvas, g.title, kGap, 19, 0.5);
  for (size_t i = 0; i < g.tiles.size(); ++i) {
    const Tile& t = g.tiles[i];
    const int r = int(i) / cols, c = int(i) % cols;
    const int x = left + c * (side + kGap), y = kTitleH + r * cell_h;
    cv::Mat cell;
    if (t.image.defined() && t.heat.defined()) {
      cv::addWeighted(to_bgr(t.image, side), 0.45, heat_bgr(t.heat, side), 0.55, 0.0, cell);
    } else if (t.image.defined()) {
      cell = to_bgr(t.image, side);
    } else if (t.heat.defined()) {
      cell = heat_bgr(t.heat, side);
    } else {
      continue;
    }
    cell.copyTo(canvas(cv::Rect(x, y, side, side)));
    if (!t.label.empty()) text(canvas, t.label, x, y + side + 12, 0.33);
  }
  for (size_t r = 0; r < g.row_labels.size() && int(r) < rows; ++r)
    text(canvas, g.row_labels[r], kGap, kTitleH + int(r) * cell_h + side / 2, 0.38);
  std::filesystem::create_directories(png.parent_path().empty() ? "." : png.parent_path());
  if (!cv::imwrite(png.string(), canvas)) throw Error("cannot write " + png.string());
}
#endif

}  // namespace biaslab::plot
