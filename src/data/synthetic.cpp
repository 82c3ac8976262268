#include "data/synthetic.h"

#include <ATen/Parallel.h>
#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include <cmath>
#include <random>

#include "core/seed_mix.h"

namespace biaslab {
namespace {

using Rng = std::mt19937_64;
double uniform(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// Small patches of a grating of orientation `label` x 45 degrees (random frequency,
// phase and contrast) at random places on a background of smoothed isotropic noise,
// with pixel noise everywhere: only local, oriented texture tells the classes apart.
cv::Mat texture(int64_t label, int size, Rng& rng) {
  std::normal_distribution<double> noise(0.0, 1.0);
  cv::Mat background(size, size, CV_64FC1);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) background.at<double>(y, x) = noise(rng);
  cv::GaussianBlur(background, background, cv::Size(0, 0), 1.2);
  const double bg_contrast = uniform(rng, 60.0, 120.0), base = uniform(rng, 100.0, 150.0);
  cv::Mat img(size, size, CV_8UC1);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) img.at<uint8_t>(y, x) = cv::saturate_cast<uint8_t>(base + bg_contrast * background.at<double>(y, x));
  const int patches = int(uniform(rng, 2, 5));
  for (int p = 0; p < patches; ++p) {
    const double theta = double(label) * M_PI / 4.0 + uniform(rng, -0.15, 0.15);
    const double freq = uniform(rng, 0.2, 0.33) * 2.0 * M_PI, phase = uniform(rng, 0.0, 2.0 * M_PI);
    const double contrast = uniform(rng, 35.0, 70.0), radius = uniform(rng, size * 0.09, size * 0.15);
    const double cx = uniform(rng, 0, size), cy = uniform(rng, 0, size);
    const double c = std::cos(theta), sn = std::sin(theta);
    for (int y = 0; y < size; ++y)
      for (int x = 0; x < size; ++x) {
        const double d = std::hypot(x - cx, y - cy);
        if (d > radius) continue;
        const double v = base + contrast * std::sin(freq * (x * c + y * sn) + phase);
        img.at<uint8_t>(y, x) = cv::saturate_cast<uint8_t>(v);
      }
  }
  std::normal_distribution<double> pixel(0.0, 12.0);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) img.at<uint8_t>(y, x) = cv::saturate_cast<uint8_t>(img.at<uint8_t>(y, x) + pixel(rng));
  return img;
}

// A random binary glyph of g x g cells, one pixel per cell, each on with probability 1/2
// (at least two on): SVRT-style same-different (Fleuret et al. 2011; Kim et al. 2018).
cv::Mat glyph(int g, Rng& rng) {
  cv::Mat m(g, g, CV_8UC1);
  do {
    for (int y = 0; y < g; ++y)
      for (int x = 0; x < g; ++x) m.at<uint8_t>(y, x) = uniform(rng, 0, 1) < 0.5 ? 1 : 0;
  } while (cv::countNonZero(m) < 2);
  return m;
}

// The glyph cropped to its lit cells: what an observer sees (the cell frame is invisible).
cv::Mat visible(const cv::Mat& m) { return m(cv::boundingRect(m)).clone(); }

bool looks_same(const cv::Mat& a, const cv::Mat& b) {
  const cv::Mat va = visible(a), vb = visible(b);
  return va.size() == vb.size() && cv::countNonZero(va != vb) == 0;
}

cv::Mat same_different(int64_t label, int size, Rng& rng) {
  cv::Mat img(size, size, CV_8UC1);
  std::normal_distribution<double> noise(0.0, 10.0);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) img.at<uint8_t>(y, x) = cv::saturate_cast<uint8_t>(40.0 + noise(rng));
  const int g = std::max(3, size / 6);
  const cv::Mat first = glyph(g, rng);
  cv::Mat second = first;
  if (label == 0) {
    do second = glyph(g, rng);
    while (looks_same(first, second));
  }
  // Top-left corners at least half the image apart.
  cv::Point a, b;
  do {
    a = {int(uniform(rng, 0, size - g)), int(uniform(rng, 0, size - g))};
    b = {int(uniform(rng, 0, size - g)), int(uniform(rng, 0, size - g))};
  } while (std::hypot(a.x - b.x, a.y - b.y) < size * 0.5);
  const double va = uniform(rng, 170, 255), vb = uniform(rng, 170, 255);
  for (int y = 0; y < g; ++y)
    for (int x = 0; x < g; ++x) {
      if (first.at<uint8_t>(y, x)) img.at<uint8_t>(a.y + y, a.x + x) = cv::saturate_cast<uint8_t>(va);
      if (second.at<uint8_t>(y, x)) img.at<uint8_t>(b.y + y, b.x + x) = cv::saturate_cast<uint8_t>(vb);
    }
  return img;
}

}  // namespace

const std::vector<std::string>& synthetic_tasks() {
  static const std::vector<std::string> tasks = {"same_different", "texture"};
  return tasks;
}

int64_t synthetic_classes(const std::string& task) {
  if (task == "texture") return 4;
  if (task == "same_different") return 2;
  return 0;
}

std::vector<std::string> synthetic_class_names(const std::string& task) {
  if (task == "texture") return {"0deg", "45deg", "90deg", "135deg"};
  return {"different", "same"};
}

Split generate_synthetic(const std::string& task, const std::string& split, int64_t n, int64_t channels, int64_t size,
                         uint64_t seed) {
  const int64_t classes = synthetic_classes(task);
  TORCH_CHECK(classes > 0, "unknown synthetic task '", task, "'");
  TORCH_CHECK(size >= kMinSyntheticSize, "synthetic images need a side of at least ", kMinSyntheticSize, ", got ", size);
  auto images = torch::empty({n, channels, size, size}, torch::kUInt8);
  auto labels = torch::empty({n}, torch::kLong);
  auto* label_ptr = labels.data_ptr<int64_t>();
  const uint64_t split_key = split == "train" ? 0x7261696eULL : 0x74657374ULL;
  at::parallel_for(0, n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Rng rng(mix_seed(seed ^ mix_seed(split_key ^ mix_seed(uint64_t(i)))));
      const int64_t label = i % classes;  // balanced classes
      cv::Mat img = task == "texture" ? texture(label, int(size), rng) : same_different(label, int(size), rng);
      auto plane = torch::from_blob(img.data, {size, size}, torch::kUInt8);
      images[i].copy_(plane.unsqueeze(0).expand({channels, size, size}));
      label_ptr[i] = label;
    }
  });
  return {images, labels};
}

}  // namespace biaslab
