#pragma once
// Bias probes: what a trained model's built-in biases do to its predictions, measured
// directly on test images instead of inferred from accuracy. Each probe transforms the
// raw (uint8) images, normalises them like the test set and compares the predictions
// with the labels (accuracy) and with the predictions on the untouched images
// (consistency: 1 = the transformation changes no prediction).
//   translation  the image shifted by s = 0..max_shift pixels on its own canvas (the
//                vacated border filled with 0), right, left, down and up, averaged: a
//                CNN is translation-equivariant up to its border and pooling; a ViT with
//                absolute positions is not
//   shuffle      the image's block x block tiles permuted (one fixed permutation): for a
//                ViT with patch-sized blocks that permutes its tokens, to which attention
//                without positions and mean pooling are invariant
//   rotation     rotated by +-15 and +-30 degrees about the centre; scale: by 0.8 and 1.2
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/classifier.h"

namespace biaslab {

/// `images` (N, C, H, W) uint8 shifted by (dx, dy) pixels (right and down positive),
/// the vacated border 0.
torch::Tensor shift_images(const torch::Tensor& images, int64_t dx, int64_t dy);

/// `images` with their block x block tiles (the image side a multiple of `block`)
/// rearranged by `perm` (tile t of the output is tile perm[t] of the input, row-major).
torch::Tensor shuffle_blocks(const torch::Tensor& images, int64_t block, const std::vector<int64_t>& perm);

/// A fixed permutation of `n` tiles (a seeded shuffle, never the identity for n >= 2).
std::vector<int64_t> block_permutation(int64_t n, uint64_t seed);

/// `images` rotated by `degrees` (the sign sets the direction) and scaled by `scale`
/// about the centre, bilinear, the outside 0, rounded back to uint8.
torch::Tensor rotate_scale(const torch::Tensor& images, double degrees, double scale);

struct ProbePoint {
  std::string probe;   ///< translation | shuffle | rotation | scale
  double amount = 0;   ///< pixels, block size, degrees or factor
  double accuracy = 0, consistency = 0;
};

/// Every probe on `images` (uint8) with `labels`, evaluated in eval mode without
/// gradients in batches; `mean`/`std` normalise as the test set is; `block` is the
/// shuffle's tile side (0 or not dividing the image: no shuffle probe).
std::vector<ProbePoint> run_probes(Classifier& model, const torch::Tensor& images, const torch::Tensor& labels,
                                   const std::vector<double>& mean, const std::vector<double>& std,
                                   int64_t max_shift, int64_t block);

}  // namespace biaslab
