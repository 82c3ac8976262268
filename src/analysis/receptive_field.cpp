#include "analysis/receptive_field.h"

#include <torch/torch.h>

#include <cmath>

#include "models/classifier.h"
#include "models/vit.h"

namespace biaslab {

torch::Tensor effective_receptive_field(const std::function<torch::Tensor(const torch::Tensor&)>& features,
                                        const torch::Tensor& images) {
  auto x = images.detach().clone().requires_grad_(true);
  auto map = features(x);
  TORCH_CHECK(map.dim() == 4, "effective_receptive_field: a (B, C, h, w) feature map expected, got ", map.sizes());
  auto centre = map.select(3, map.size(3) / 2).select(2, map.size(2) / 2);  // (B, C)
  auto grad = torch::autograd::grad({centre.sum()}, {x})[0];
  return grad.abs().sum(1).mean(0).detach();  // (H, W)
}

std::function<torch::Tensor(const torch::Tensor&)> feature_map_fn(Classifier& model) {
  auto stages = model.stages();
  TORCH_CHECK(!stages.empty() && stages.back().name == "head", "feature_map_fn: the last stage must be the head");
  stages.pop_back();
  auto* vit = dynamic_cast<ViTImpl*>(&model);
  const int64_t grid = vit ? vit->patch_embed->grid_size() : 0;
  return [stages, vit, grid](const torch::Tensor& images) {
    auto y = images;
    for (const auto& s : stages) y = s.forward(y);
    if (!vit) return y;
    const int64_t prefix = y.size(1) - grid * grid;  // the class token, if any
    auto tokens = y.narrow(1, prefix, grid * grid);   // (B, P, D), row-major grid
    return tokens.transpose(1, 2).reshape({y.size(0), y.size(2), grid, grid});
  };
}

std::pair<int64_t, int64_t> erf_centre(const torch::Tensor& erf) {
  const auto e = erf.to(torch::kDouble);
  const double total = e.sum().item<double>();
  if (total <= 0) return {e.size(0) / 2, e.size(1) / 2};
  const auto rows = torch::arange(e.size(0), torch::kDouble), cols = torch::arange(e.size(1), torch::kDouble);
  const double r = (e.sum(1) * rows).sum().item<double>() / total;
  const double c = (e.sum(0) * cols).sum().item<double>() / total;
  return {int64_t(std::lround(r)), int64_t(std::lround(c))};
}

int64_t erf_side(const torch::Tensor& erf, double share) {
  const auto e = erf.to(torch::kDouble);
  const double total = e.sum().item<double>();
  const int64_t h = e.size(0), w = e.size(1);
  const auto [cy, cx] = erf_centre(e);
  if (total <= 0) return 0;
  for (int64_t r = 0;; ++r) {
    const int64_t y0 = std::max<int64_t>(0, cy - r), y1 = std::min(h, cy + r + 1);
    const int64_t x0 = std::max<int64_t>(0, cx - r), x1 = std::min(w, cx + r + 1);
    if (e.slice(0, y0, y1).slice(1, x0, x1).sum().item<double>() >= share * total || (y0 == 0 && x0 == 0 && y1 == h && x1 == w))
      return 2 * r + 1;
  }
}

int64_t support_side(const torch::Tensor& erf) {
  auto nz = (erf != 0).nonzero();  // (K, 2)
  if (nz.size(0) == 0) return 0;
  const auto lo = std::get<0>(nz.min(0)), hi = std::get<0>(nz.max(0));
  return std::max(hi[0].item<int64_t>() - lo[0].item<int64_t>(), hi[1].item<int64_t>() - lo[1].item<int64_t>()) + 1;
}

}  // namespace biaslab
