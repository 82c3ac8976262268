#include "data/synthetic.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/seed_mix.h"

namespace biaslab {
namespace {

using Rng = std::mt19937_64;
double uniform(Rng& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// Round to nearest (ties to even, like OpenCV's cvRound) and clamp to 0..255.
uint8_t to_u8(double v) {
  const double r = std::nearbyint(v);
  return r <= 0 ? 0 : r >= 255 ? 255 : uint8_t(r);
}

// One greyscale plane, row-major (no OpenCV: the tasks generate the same bytes without it).
template <typename T>
struct Plane {
  int rows = 0, cols = 0;
  std::vector<T> px;
  Plane(int r, int c) : rows(r), cols(c), px(size_t(r) * size_t(c)) {}
  T& at(int y, int x) { return px[size_t(y) * size_t(cols) + size_t(x)]; }
  T at(int y, int x) const { return px[size_t(y) * size_t(cols) + size_t(x)]; }
};
using Image = Plane<uint8_t>;

// Index p of a line of n samples mirrored at its ends without repeating the edge (OpenCV's
// BORDER_REFLECT_101, GaussianBlur's default).
int reflect101(int p, int n) {
  if (n == 1) return 0;
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;
  return p;
}

void gaussian_blur(Plane<double>& a, double sigma) {
  const int n = int(std::lround(sigma * 8 + 1)) | 1, r = n / 2;
  std::vector<double> k(size_t(n), 0.0);
  const double scale2 = -0.5 / (sigma * sigma);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    const double x = i - (n - 1) * 0.5;
    k[size_t(i)] = std::exp(scale2 * x * x);
    sum += k[size_t(i)];
  }
  for (auto& v : k) v *= 1.0 / sum;
  Plane<double> rows(a.rows, a.cols);
  for (int y = 0; y < a.rows; ++y)
    for (int x = 0; x < a.cols; ++x) {
      double s = k[0] * a.at(y, reflect101(x - r, a.cols));
      for (int j = 1; j < n; ++j) s = std::fma(k[size_t(j)], a.at(y, reflect101(x - r + j, a.cols)), s);
      rows.at(y, x) = s;
    }
  for (int y = 0; y < a.rows; ++y)
    for (int x = 0; x < a.cols; ++x) {
      double s = k[size_t(r)] * rows.at(y, x);
      for (int j = 1; j <= r; ++j)
        s = std::fma(k[size_t(r + j)], rows.at(reflect101(y + j, a.rows), x) + rows.at(reflect101(y - j, a.rows), x), s);
      a.at(y, x) = s;
    }
}

// Small patches of a grating of orientation `label` x 45 degrees (random frequency,
// phase and contrast) at random places on a background of smoothed isotropic noise,
// with pixel noise everywhere: only local, oriented texture tells the classes apart.
Image texture(int64_t label, int size, Rng& rng) {
  std::normal_distribution<double> noise(0.0, 1.0);
  Plane<double> background(size, size);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) background.at(y, x) = noise(rng);
  gaussian_blur(background, 1.2);
  const double bg_contrast = uniform(rng, 60.0, 120.0), base = uniform(rng, 100.0, 150.0);
  Image img(size, size);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) img.at(y, x) = to_u8(base + bg_contrast * background.at(y, x));
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
        img.at(y, x) = to_u8(base + contrast * std::sin(freq * (x * c + y * sn) + phase));
      }
  }
  std::normal_distribution<double> pixel(0.0, 12.0);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) img.at(y, x) = to_u8(img.at(y, x) + pixel(rng));
  return img;
}

int64_t lit(const Image& m) { return std::count_if(m.px.begin(), m.px.end(), [](uint8_t v) { return v != 0; }); }

// A random binary glyph of g x g cells, one pixel per cell, each on with probability 1/2
// (at least two on): SVRT-style same-different (Fleuret et al. 2011; Kim et al. 2018).
Image glyph(int g, Rng& rng) {
  Image m(g, g);
  do {
    for (int y = 0; y < g; ++y)
      for (int x = 0; x < g; ++x) m.at(y, x) = uniform(rng, 0, 1) < 0.5 ? 1 : 0;
  } while (lit(m) < 2);
  return m;
}

// The glyph cropped to its lit cells: what an observer sees (the cell frame is invisible).
Image visible(const Image& m) {
  int top = m.rows, bottom = -1, left = m.cols, right = -1;
  for (int y = 0; y < m.rows; ++y)
    for (int x = 0; x < m.cols; ++x)
      if (m.at(y, x)) {
        top = std::min(top, y), bottom = std::max(bottom, y), left = std::min(left, x), right = std::max(right, x);
      }
  if (bottom < 0) return Image(0, 0);
  Image out(bottom - top + 1, right - left + 1);
  for (int y = 0; y < out.rows; ++y)
    for (int x = 0; x < out.cols; ++x) out.at(y, x) = m.at(top + y, left + x);
  return out;
}

bool looks_same(const Image& a, const Image& b) {
  const Image va = visible(a), vb = visible(b);
  return va.rows == vb.rows && va.cols == vb.cols && va.px == vb.px;
}

Image same_different(int64_t label, int size, Rng& rng) {
  Image img(size, size);
  std::normal_distribution<double> noise(0.0, 10.0);
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) img.at(y, x) = to_u8(40.0 + noise(rng));
  const int g = std::max(3, size / 6);
  const Image first = glyph(g, rng);
  Image second = first;
  if (label == 0) {
    do second = glyph(g, rng);
    while (looks_same(first, second));
  }
  // Top-left corners at least half the image apart.
  int ax = 0, ay = 0, bx = 0, by = 0;
  do {
    ax = int(uniform(rng, 0, size - g)), ay = int(uniform(rng, 0, size - g));
    bx = int(uniform(rng, 0, size - g)), by = int(uniform(rng, 0, size - g));
  } while (std::hypot(ax - bx, ay - by) < size * 0.5);
  const double va = uniform(rng, 170, 255), vb = uniform(rng, 170, 255);
  for (int y = 0; y < g; ++y)
    for (int x = 0; x < g; ++x) {
      if (first.at(y, x)) img.at(ay + y, ax + x) = to_u8(va);
      if (second.at(y, x)) img.at(by + y, bx + x) = to_u8(vb);
    }
  return img;
}

}  // namespace

void detail::gaussian_blur(std::vector<double>& plane, int rows, int cols, double sigma) {
  Plane<double> a(rows, cols);
  a.px = std::move(plane);
  biaslab::gaussian_blur(a, sigma);
  plane = std::move(a.px);
}

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
      Image img = task == "texture" ? texture(label, int(size), rng) : same_different(label, int(size), rng);
      auto plane = torch::from_blob(img.px.data(), {size, size}, torch::kUInt8);
      images[i].copy_(plane.unsqueeze(0).expand({channels, size, size}));
      label_ptr[i] = label;
    }
  });
  return {images, labels};
}

}  // namespace biaslab
