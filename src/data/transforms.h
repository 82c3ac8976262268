#pragma once
// Batched image transforms on tensors (B, C, H, W). Every random choice comes from the
// generator passed in, so a batch's augmentation is a function of its seed alone.
// uint8 in, uint8 out, unless stated otherwise.
#include <ATen/core/Generator.h>
#include <torch/types.h>

#include <vector>

namespace biaslab {

/// uint8 -> float in [0, 1], then (x - mean) / std per channel.
torch::Tensor normalize(const torch::Tensor& images_u8, const std::vector<double>& mean,
                        const std::vector<double>& std);

/// Per-channel mean and standard deviation on the [0, 1] scale of uint8 images.
std::pair<std::vector<double>, std::vector<double>> channel_stats(const torch::Tensor& images_u8);

/// Zero-pads each image by `padding` and crops a random H x W window per image.
torch::Tensor random_crop(const torch::Tensor& images, int64_t padding, at::Generator& gen);

/// Flips each image left-right with probability 1/2.
torch::Tensor random_hflip(const torch::Tensor& images, at::Generator& gen);

/// Random resized crop (Szegedy et al. 2015; torchvision's RandomResizedCrop): per image
/// a box with an area share in [scale_lo, scale_hi] of the image and an aspect ratio
/// log-uniform in [3/4, 4/3] that fits the image (10 tries, else the whole image),
/// resized back to H x W (bilinear).
torch::Tensor random_resized_crop(const torch::Tensor& images, double scale_lo, double scale_hi, at::Generator& gen);

/// TrivialAugment (Mueller & Hutter 2021): per image one operation drawn uniformly
/// (identity, brightness, contrast, solarize, posterize, autocontrast, rotate, shear x/y,
/// translate x/y) at a magnitude drawn uniformly.
torch::Tensor trivial_augment(const torch::Tensor& images, at::Generator& gen);

/// Random erasing (Zhong et al. 2017) on normalised float images: with probability p per
/// image, a box of 2-33% of the area, aspect ratio log-uniform in [0.3, 3.3] (10 tries to
/// fit), set to 0 (the dataset mean).
torch::Tensor random_erasing(const torch::Tensor& images, double p, at::Generator& gen);

/// Mixup (Zhang et al. 2018) or CutMix (Yun et al. 2019) of a float batch with its
/// reverse, as timm's batch mode: one lambda ~ Beta(alpha, alpha) per batch; with both
/// alphas > 0 each batch picks one of the two with probability 1/2. Returns the mixed
/// images and soft targets (B, num_classes): lambda one_hot(y) + (1 - lambda) one_hot(y
/// reversed), lambda corrected to the pasted area for CutMix.
std::pair<torch::Tensor, torch::Tensor> mix_batch(const torch::Tensor& images, const torch::Tensor& labels,
                                                  int64_t num_classes, double mixup_alpha, double cutmix_alpha,
                                                  at::Generator& gen);

}  // namespace biaslab
