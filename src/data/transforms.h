#pragma once
// Batched image transforms on tensors (B, C, H, W).
#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <vector>

namespace biaslab {

/// uint8 -> float in [0, 1], then (x - mean) / std per channel.
torch::Tensor normalize(const torch::Tensor& images_u8, const std::vector<double>& mean,
                        const std::vector<double>& std);

/// Zero-pads each image by `padding` and crops a random H x W window per image.
torch::Tensor random_crop(const torch::Tensor& images, int64_t padding, at::Generator& gen);

/// Flips each image left-right with probability 1/2.
torch::Tensor random_hflip(const torch::Tensor& images, at::Generator& gen);

}  // namespace biaslab
