#pragma once
// Effective receptive fields (Luo et al. 2016, arXiv:1701.04128): how strongly each input
// pixel moves the central unit of a network's last feature map, measured by the gradient
// -- next to the theoretical receptive field (models/summary.h), the region that can
// matter at all. Luo et al. find the effective one Gaussian-like and much smaller.
#include <torch/types.h>

#include <functional>
#include <utility>

namespace biaslab {

class Classifier;

/// Gradient of the central unit (h/2, w/2) of `features`' map (B, C, h, w) -- the sum of
/// its channels -- with respect to the images (B, C_in, H, W): |grad| summed over input
/// channels and averaged over images. Returns (H, W).
torch::Tensor effective_receptive_field(const std::function<torch::Tensor(const torch::Tensor&)>& features,
                                        const torch::Tensor& images);

/// The model's last feature map before its head, as (B, C, h, w): a CNN's last stage, a
/// ViT's patch tokens after the last block laid out on their grid (prefix tokens dropped).
std::function<torch::Tensor(const torch::Tensor&)> feature_map_fn(Classifier& model);

/// The ERF's centre of mass (row, column), rounded: where the measured unit looks (for a
/// strided CNN not the image centre: unit j of a stride-2 map sits over pixel 2j).
std::pair<int64_t, int64_t> erf_centre(const torch::Tensor& erf);

/// Side (odd, in pixels) of the smallest square centred on erf_centre() holding at least
/// `share` of the ERF's mass.
int64_t erf_side(const torch::Tensor& erf, double share);

/// Side of the smallest square bounding every non-zero value (the ERF's support).
int64_t support_side(const torch::Tensor& erf);

}  // namespace biaslab
