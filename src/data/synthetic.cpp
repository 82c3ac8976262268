#include "data/synthetic.h"

#include <ATen/Parallel.h>
#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include <cmath>
#include <random>

namespace biaslab {
namespace {

uint64_t mix(uint64_t x) {  // SplitMix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

using Rng = std::mt19937_64;
double uniform(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// Grating of orientation `label` x 45 degrees, random frequency, phase and contrast,
// with pixel noise, partly hidden by random flat blobs.
cv::Mat texture(int64_t label, int size, Rng& rng) {
  const double theta = double(label) * M_PI / 4.0 + uniform(rng, -0.12, 0.12);
  const double freq = uniform(rng, 0.18, 0.32) * 2.0 * M_PI;  // radians per pixel
  const double phase = uniform(rng, 0.0, 2.0 * M_PI), contrast = uniform(rng, 50.0, 110.0);
  const double base = uniform(rng, 90.0, 160.0);
  std::normal_distribution<double> noise(0.0, 18.0);
  cv::Mat img(size, size, CV_8UC1);
  const double cx = std::cos(theta), sy = std::sin(theta);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) {
      const double v = base + contrast * std::sin(freq * (x * cx + y * sy) + phase) + noise(rng);
      img.at<uint8_t>(y, x) = cv::saturate_cast<uint8_t>(v);
    }
  const int blobs = int(uniform(rng, 1, 4));
  for (int b = 0; b < blobs; ++b) {
    const cv::Point c(int(uniform(rng, 0, size)), int(uniform(rng, 0, size)));
    const int r = int(uniform(rng, size * 0.08, size * 0.22));
    cv::circle(img, c, r, cv::Scalar(uniform(rng, 0, 255)), cv::FILLED, cv::LINE_AA);
  }
  return img;
}

// One of 6 shape kinds centred at c with radius r.
void draw_shape(cv::Mat& img, int kind, cv::Point2d c, double r, double value) {
  const cv::Scalar color(value);
  auto poly = [&](const std::vector<cv::Point2d>& unit) {
    std::vector<cv::Point> pts;
    for (const auto& p : unit) pts.emplace_back(cvRound(c.x + r * p.x), cvRound(c.y + r * p.y));
    cv::fillPoly(img, std::vector<std::vector<cv::Point>>{pts}, color, cv::LINE_AA);
  };
  const int thick = std::max(1, int(std::lround(r / 3)));
  switch (kind) {
    case 0: cv::circle(img, cv::Point(cvRound(c.x), cvRound(c.y)), cvRound(r), color, cv::FILLED, cv::LINE_AA); break;
    case 1: poly({{-0.8, -0.8}, {0.8, -0.8}, {0.8, 0.8}, {-0.8, 0.8}}); break;                   // square
    case 2: poly({{0, -1}, {0.87, 0.5}, {-0.87, 0.5}}); break;                                     // triangle
    case 3: poly({{0, -1}, {1, 0}, {0, 1}, {-1, 0}}); break;                                       // diamond
    case 4:                                                                                         // cross
      cv::line(img, cv::Point(cvRound(c.x - r), cvRound(c.y)), cv::Point(cvRound(c.x + r), cvRound(c.y)), color, thick);
      cv::line(img, cv::Point(cvRound(c.x), cvRound(c.y - r)), cv::Point(cvRound(c.x), cvRound(c.y + r)), color, thick);
      break;
    default: cv::circle(img, cv::Point(cvRound(c.x), cvRound(c.y)), cvRound(r * 0.8), color, thick, cv::LINE_AA);  // ring
  }
}

cv::Mat same_different(int64_t label, int size, Rng& rng) {
  cv::Mat img(size, size, CV_8UC1);
  std::normal_distribution<double> noise(0.0, 10.0);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) img.at<uint8_t>(y, x) = cv::saturate_cast<uint8_t>(30.0 + noise(rng));
  const int first = int(uniform(rng, 0, 6));
  int second = first;
  if (label == 0) second = (first + 1 + int(uniform(rng, 0, 5))) % 6;
  const double margin = size * 0.14;
  cv::Point2d a, b;
  do {
    a = {uniform(rng, margin, size - margin), uniform(rng, margin, size - margin)};
    b = {uniform(rng, margin, size - margin), uniform(rng, margin, size - margin)};
  } while (std::hypot(a.x - b.x, a.y - b.y) < size * 0.5);
  draw_shape(img, first, a, uniform(rng, size * 0.08, size * 0.13), uniform(rng, 150, 255));
  draw_shape(img, second, b, uniform(rng, size * 0.08, size * 0.13), uniform(rng, 150, 255));
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
  auto images = torch::empty({n, channels, size, size}, torch::kUInt8);
  auto labels = torch::empty({n}, torch::kLong);
  auto* label_ptr = labels.data_ptr<int64_t>();
  const uint64_t split_key = split == "train" ? 0x7261696eULL : 0x74657374ULL;
  at::parallel_for(0, n, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Rng rng(mix(seed ^ mix(split_key ^ mix(uint64_t(i)))));
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
