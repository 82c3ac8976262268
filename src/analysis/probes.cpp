#include "analysis/probes.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "data/transforms.h"

namespace biaslab {

torch::Tensor shift_images(const torch::Tensor& images, int64_t dx, int64_t dy) {
  const int64_t h = images.size(2), w = images.size(3);
  auto out = torch::zeros_like(images);
  const int64_t rows = h - std::abs(dy), cols = w - std::abs(dx);
  if (rows <= 0 || cols <= 0) return out;
  out.narrow(2, std::max<int64_t>(dy, 0), rows)
      .narrow(3, std::max<int64_t>(dx, 0), cols)
      .copy_(images.narrow(2, std::max<int64_t>(-dy, 0), rows).narrow(3, std::max<int64_t>(-dx, 0), cols));
  return out;
}

torch::Tensor shuffle_blocks(const torch::Tensor& images, int64_t block, const std::vector<int64_t>& perm) {
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const int64_t gh = h / block, gw = w / block;
  TORCH_CHECK(gh * block == h && gw * block == w && int64_t(perm.size()) == gh * gw,
              "shuffle_blocks: the image must be a whole number of blocks, one permutation entry per block");
  // (N, C, gh, b, gw, b) -> (N, C, gh * gw, b, b): tile t = row-major index.
  auto tiles = images.view({n, c, gh, block, gw, block}).permute({0, 1, 2, 4, 3, 5}).reshape({n, c, gh * gw, block, block});
  auto index = torch::tensor(perm, torch::kLong);
  auto moved = tiles.index_select(2, index);
  return moved.view({n, c, gh, gw, block, block}).permute({0, 1, 2, 4, 3, 5}).reshape({n, c, h, w}).contiguous();
}

std::vector<int64_t> block_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  if (n < 2) return perm;
  std::mt19937_64 rng(seed);
  do {
    for (int64_t i = n - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[size_t(rng() % uint64_t(i + 1))]);
  } while (std::is_sorted(perm.begin(), perm.end()));
  return perm;
}

torch::Tensor rotate_scale(const torch::Tensor& images, double degrees, double scale) {
  namespace F = torch::nn::functional;
  const double a = degrees * M_PI / 180.0;
  // affine_grid maps output coordinates to input ones: the inverse of rotating by `a`
  // and scaling by `scale` (normalised coordinates, square images keep their aspect).
  const double c = std::cos(a) / scale, s = std::sin(a) / scale;
  auto theta = torch::tensor({c, -s, 0.0, s, c, 0.0}, torch::kFloat).view({1, 2, 3}).expand({images.size(0), 2, 3});
  auto x = images.to(torch::kFloat);
  auto grid = F::affine_grid(theta, x.sizes(), /*align_corners=*/false);
  auto out = F::grid_sample(x, grid, F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kZeros).align_corners(false));
  return out.round().clamp(0, 255).to(torch::kUInt8);
}

namespace {

torch::Tensor predict(Classifier& model, const torch::Tensor& images, const std::vector<double>& mean,
                      const std::vector<double>& std) {
  std::vector<torch::Tensor> out;
  for (int64_t begin = 0; begin < images.size(0); begin += 128) {
    const int64_t len = std::min<int64_t>(128, images.size(0) - begin);
    out.push_back(model.forward(normalize(images.narrow(0, begin, len), mean, std)).argmax(1));
  }
  return torch::cat(out);
}

}  // namespace

std::vector<ProbePoint> run_probes(Classifier& model, const torch::Tensor& images, const torch::Tensor& labels,
                                   const std::vector<double>& mean, const std::vector<double>& std,
                                   int64_t max_shift, int64_t block) {
  torch::NoGradGuard no_grad;
  model.eval();
  const auto base = predict(model, images, mean, std);
  std::vector<ProbePoint> points;
  auto add = [&](const std::string& probe, double amount, const std::vector<torch::Tensor>& variants) {
    double acc = 0, same = 0;
    for (const auto& v : variants) {
      const auto p = predict(model, v, mean, std);
      acc += p.eq(labels).to(torch::kDouble).mean().item<double>();
      same += p.eq(base).to(torch::kDouble).mean().item<double>();
    }
    points.push_back({probe, amount, acc / double(variants.size()), same / double(variants.size())});
  };
  for (int64_t s = 0; s <= max_shift; ++s)
    add("translation", double(s),
        s == 0 ? std::vector<torch::Tensor>{images}
               : std::vector<torch::Tensor>{shift_images(images, s, 0), shift_images(images, -s, 0),
                                            shift_images(images, 0, s), shift_images(images, 0, -s)});
  const int64_t side = images.size(2);
  if (block > 0 && side % block == 0 && images.size(3) % block == 0 && side / block >= 2) {
    const auto perm = block_permutation((side / block) * (images.size(3) / block), 0);
    add("shuffle", double(block), {shuffle_blocks(images, block, perm)});
  }
  for (const double deg : {15.0, 30.0}) add("rotation", deg, {rotate_scale(images, deg, 1.0), rotate_scale(images, -deg, 1.0)});
  for (const double f : {0.8, 1.2}) add("scale", f, {rotate_scale(images, 0.0, f)});
  return points;
}

}  // namespace biaslab
