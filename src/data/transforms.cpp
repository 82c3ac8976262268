#include "data/transforms.h"

#include <torch/torch.h>

namespace biaslab {

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

}  // namespace biaslab
