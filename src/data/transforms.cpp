#include "data/transforms.h"

#include <torch/torch.h>

#include <cmath>

namespace biaslab {
namespace F = torch::nn::functional;

namespace {

double uniform(at::Generator& gen, double lo, double hi) {
  return lo + (hi - lo) * torch::rand({1}, gen, torch::kDouble).item<double>();
}

// Resamples float images (B, C, H, W) through per-image affine maps theta (B, 2, 3) in
// normalised coordinates (output -> input), bilinear, zeros outside.
torch::Tensor warp(const torch::Tensor& images, const torch::Tensor& theta) {
  auto grid = F::affine_grid(theta.to(torch::kFloat), images.sizes().vec(), /*align_corners=*/false);
  return F::grid_sample(images, grid,
                        F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kZeros).align_corners(false));
}

torch::Tensor to_u8(const torch::Tensor& x) { return x.round().clamp_(0, 255).to(torch::kUInt8); }

// A box with an area share drawn uniformly in [s_lo, s_hi] and an aspect ratio drawn
// log-uniformly in [r_lo, r_hi] that fits the h x w image, in up to 10 tries (as
// torchvision's RandomResizedCrop and RandomErasing): (height, width), or (0, 0).
std::pair<int64_t, int64_t> sample_box(double s_lo, double s_hi, double r_lo, double r_hi, int64_t h, int64_t w,
                                       at::Generator& gen) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double area = uniform(gen, s_lo, s_hi) * double(h * w);
    const double ratio = std::exp(uniform(gen, std::log(r_lo), std::log(r_hi)));
    const auto bw = std::llround(std::sqrt(area * ratio)), bh = std::llround(std::sqrt(area / ratio));
    if (bw > 0 && bh > 0 && bw <= w && bh <= h) return {bh, bw};
  }
  return {0, 0};
}

}  // namespace

torch::Tensor normalize(const torch::Tensor& images_u8, const std::vector<double>& mean,
                        const std::vector<double>& std) {
  const int64_t c = images_u8.size(1);
  TORCH_CHECK(int64_t(mean.size()) == c && int64_t(std.size()) == c, "normalize: expected ", c,
              " mean/std values, got ", mean.size(), "/", std.size());
  // Fold 1/255 into the affine map: y = x * (1 / (255 std)) - mean / std.
  std::vector<float> scale(c), shift(c);
  for (int64_t i = 0; i < c; ++i) {
    scale[i] = float(1.0 / (255.0 * std[i]));
    shift[i] = float(-mean[i] / std[i]);
  }
  auto s = torch::from_blob(scale.data(), {1, c, 1, 1}, torch::kFloat).clone();
  auto b = torch::from_blob(shift.data(), {1, c, 1, 1}, torch::kFloat).clone();
  return torch::addcmul(b, images_u8.to(torch::kFloat), s);
}

std::pair<std::vector<double>, std::vector<double>> channel_stats(const torch::Tensor& images_u8) {
  // Sums of x and x^2 per channel in chunks of images: memory stays small for any dataset.
  const int64_t n = images_u8.size(0), c = images_u8.size(1);
  auto sum = torch::zeros({c}, torch::kDouble), sq = torch::zeros({c}, torch::kDouble);
  for (int64_t start = 0; start < n; start += 1024) {
    auto x = images_u8.narrow(0, start, std::min<int64_t>(1024, n - start)).to(torch::kDouble);
    sum += x.sum({0, 2, 3});
    sq += x.pow(2).sum({0, 2, 3});
  }
  const double count = double(n) * double(images_u8.size(2) * images_u8.size(3));
  std::vector<double> m(static_cast<size_t>(c)), s(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    const double mean = sum[i].item<double>() / count;
    m[size_t(i)] = mean / 255.0;
    s[size_t(i)] = std::sqrt(std::max(0.0, sq[i].item<double>() / count - mean * mean)) / 255.0;
  }
  return {m, s};
}

torch::Tensor random_crop(const torch::Tensor& images, int64_t padding, at::Generator& gen) {
  if (padding <= 0) return images;
  const int64_t b = images.size(0), h = images.size(2), w = images.size(3);
  auto padded = torch::constant_pad_nd(images, {padding, padding, padding, padding}, 0);
  auto offsets = torch::randint(0, 2 * padding + 1, {b, 2}, gen, torch::kLong);
  auto off = offsets.accessor<int64_t, 2>();
  auto out = torch::empty_like(images);
  for (int64_t i = 0; i < b; ++i) {
    out[i].copy_(padded[i].narrow(1, off[i][0], h).narrow(2, off[i][1], w));
  }
  return out;
}

torch::Tensor random_hflip(const torch::Tensor& images, at::Generator& gen) {
  auto flip = torch::rand({images.size(0)}, gen, torch::kFloat) < 0.5;  // (B)
  return torch::where(flip.view({-1, 1, 1, 1}), images.flip({3}), images);
}

torch::Tensor random_resized_crop(const torch::Tensor& images, double scale_lo, double scale_hi, at::Generator& gen) {
  const int64_t b = images.size(0), h = images.size(2), w = images.size(3);
  auto theta = torch::zeros({b, 2, 3}, torch::kDouble);
  auto t = theta.accessor<double, 3>();
  for (int64_t i = 0; i < b; ++i) {
    auto [bh, bw] = sample_box(scale_lo, scale_hi, 3.0 / 4.0, 4.0 / 3.0, h, w, gen);
    if (bh == 0) std::tie(bh, bw) = std::make_pair(h, w);  // no fit: the whole image
    const double top = std::floor(uniform(gen, 0, double(h - bh + 1)));
    const double left = std::floor(uniform(gen, 0, double(w - bw + 1)));
    // Output [-1, 1] maps onto the box [left, left + bw) x [top, top + bh) of the input.
    t[i][0][0] = double(bw) / double(w);
    t[i][0][2] = (2.0 * left + double(bw)) / double(w) - 1.0;
    t[i][1][1] = double(bh) / double(h);
    t[i][1][2] = (2.0 * top + double(bh)) / double(h) - 1.0;
  }
  return to_u8(warp(images.to(torch::kFloat), theta));
}

torch::Tensor trivial_augment(const torch::Tensor& images, at::Generator& gen) {
  enum Op { kIdentity, kBrightness, kContrast, kSolarize, kPosterize, kAutocontrast, kRotate, kShearX, kShearY,
            kTranslateX, kTranslateY, kNumOps };
  const int64_t b = images.size(0), h = images.size(2), w = images.size(3);
  auto ops = torch::randint(0, kNumOps, {b}, gen, torch::kLong);
  auto mags = torch::rand({b}, gen, torch::kDouble);
  auto signs = torch::randint(0, 2, {b}, gen, torch::kLong);
  auto op = ops.accessor<int64_t, 1>();
  auto mag = mags.accessor<double, 1>();
  auto sign = signs.accessor<int64_t, 1>();
  auto x = images.to(torch::kFloat, /*non_blocking=*/false, /*copy=*/true);  // edited in place below
  auto theta = torch::zeros({b, 2, 3}, torch::kDouble);
  auto t = theta.accessor<double, 3>();
  bool geometric = false;
  for (int64_t i = 0; i < b; ++i) {
    const double m = mag[i], s = sign[i] ? 1.0 : -1.0;
    t[i][0][0] = t[i][1][1] = 1.0;
    auto xi = x[i];
    switch (op[i]) {
      case kBrightness: xi.mul_(1.0 + s * 0.9 * m); break;
      case kContrast: {
        auto mean = xi.mean();
        xi.sub_(mean).mul_(1.0 + s * 0.9 * m).add_(mean);
        break;
      }
      case kSolarize: {
        const double threshold = 255.0 * (1.0 - m);
        xi.copy_(torch::where(xi >= threshold, 255.0 - xi, xi));
        break;
      }
      case kPosterize: {
        const double step = std::pow(2.0, std::floor(7.0 * m));  // keep 8 .. 2 bits
        xi.div_(step).floor_().mul_(step);
        break;
      }
      case kAutocontrast: {
        auto lo = xi.amin({1, 2}, true), hi = xi.amax({1, 2}, true);
        xi.copy_(torch::where(hi > lo, (xi - lo) * 255.0 / (hi - lo).clamp_min(1e-6), xi));
        break;
      }
      case kRotate: {
        const double a = s * m * 30.0 * M_PI / 180.0;
        t[i][0][0] = std::cos(a);
        t[i][0][1] = -std::sin(a) * double(h) / double(w);
        t[i][1][0] = std::sin(a) * double(w) / double(h);
        t[i][1][1] = std::cos(a);
        geometric = true;
        break;
      }
      case kShearX: t[i][0][1] = s * m * 0.3; geometric = true; break;
      case kShearY: t[i][1][0] = s * m * 0.3; geometric = true; break;
      case kTranslateX: t[i][0][2] = s * m * 2.0 / 3.0; geometric = true; break;  // up to a third of the width
      case kTranslateY: t[i][1][2] = s * m * 2.0 / 3.0; geometric = true; break;
      default: break;
    }
  }
  if (geometric) {
    // Only the geometric images go through the resampler (the others stay bit-exact).
    auto is_geo = (ops >= int64_t(kRotate)).nonzero().squeeze(1);
    x.index_copy_(0, is_geo, warp(x.index_select(0, is_geo), theta.index_select(0, is_geo)));
  }
  return to_u8(x);
}

torch::Tensor random_erasing(const torch::Tensor& images, double p, at::Generator& gen) {
  const int64_t b = images.size(0), h = images.size(2), w = images.size(3);
  auto out = images.clone();
  auto draws = torch::rand({b}, gen, torch::kDouble);
  for (int64_t i = 0; i < b; ++i) {
    if (draws[i].item<double>() >= p) continue;
    const auto [bh, bw] = sample_box(0.02, 1.0 / 3.0, 0.3, 3.3, h, w, gen);
    if (bh == 0) continue;  // no fit in 10 tries: left as is
    const auto top = int64_t(uniform(gen, 0, double(h - bh + 1)));
    const auto left = int64_t(uniform(gen, 0, double(w - bw + 1)));
    out[i].narrow(1, std::min(top, h - bh), bh).narrow(2, std::min(left, w - bw), bw).zero_();
  }
  return out;
}

std::pair<torch::Tensor, torch::Tensor> mix_batch(const torch::Tensor& images, const torch::Tensor& labels,
                                                  int64_t num_classes, double mixup_alpha, double cutmix_alpha,
                                                  at::Generator& gen) {
  const bool cutmix = cutmix_alpha > 0 && (mixup_alpha <= 0 || uniform(gen, 0, 1) < 0.5);
  const double alpha = cutmix ? cutmix_alpha : mixup_alpha;
  // lambda ~ Beta(alpha, alpha) as X / (X + Y) with X, Y ~ Gamma(alpha).
  auto g = at::_standard_gamma(torch::full({2}, alpha, torch::kDouble), gen);
  double lam = (g[0] / (g[0] + g[1])).item<double>();
  auto other = images.flip(0);
  torch::Tensor mixed;
  if (cutmix) {
    const int64_t h = images.size(2), w = images.size(3);
    const double cut = std::sqrt(1.0 - lam);
    const auto ch = int64_t(double(h) * cut), cw = int64_t(double(w) * cut);
    const auto cy = int64_t(uniform(gen, 0, double(h))), cx = int64_t(uniform(gen, 0, double(w)));
    const int64_t y0 = std::clamp<int64_t>(cy - ch / 2, 0, h), y1 = std::clamp<int64_t>(cy + ch / 2, 0, h);
    const int64_t x0 = std::clamp<int64_t>(cx - cw / 2, 0, w), x1 = std::clamp<int64_t>(cx + cw / 2, 0, w);
    mixed = images.clone();
    mixed.narrow(2, y0, y1 - y0).narrow(3, x0, x1 - x0).copy_(other.narrow(2, y0, y1 - y0).narrow(3, x0, x1 - x0));
    lam = 1.0 - double((y1 - y0) * (x1 - x0)) / double(h * w);  // the share actually kept
  } else {
    mixed = images * lam + other * (1.0 - lam);
  }
  auto one_hot = F::one_hot(labels, num_classes).to(torch::kFloat);
  auto targets = one_hot * lam + one_hot.flip(0) * (1.0 - lam);
  return {mixed, targets};
}

}  // namespace biaslab
