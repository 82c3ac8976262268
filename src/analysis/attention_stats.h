#pragma once
// What attention computed, per block and head: the weights themselves (rows summing to
// 1), their mean distance on the image, rollout through the layers, and how much the
// "kernel" a query patch applies changes from image to image -- a convolution applies
// the same kernel everywhere and for every image, attention a content-dependent one.
#include <torch/types.h>

#include <vector>

namespace biaslab {

class ViTImpl;

/// The attention weights of every block for `images` (eval mode, no gradients): one
/// (B, heads, N, N) tensor per block, N including the class token where the block has it.
std::vector<torch::Tensor> collect_attention(ViTImpl& vit, const torch::Tensor& images);

/// Mean attention distance per head (Dosovitskiy et al. 2021, Fig. 7): for every patch
/// query, the attention-weighted mean Euclidean distance to the patch keys (weights
/// renormalised over the patch keys, prefix tokens left out), in input pixels
/// (`patch_px` pixels per grid step), averaged over queries and images. attn: (B, H, N, N)
/// with `prefix` leading non-patch tokens and a grid x grid patch grid. Returns (H).
torch::Tensor mean_attention_distance(const torch::Tensor& attn, int64_t grid, int64_t prefix, double patch_px);

/// Mean entropy of the attention rows per head, in nats, over images and queries: 0 for a
/// one-hot row, log(k) for a row spread evenly over k keys. attn: (B, H, N, N). Returns (H).
torch::Tensor attention_entropy(const torch::Tensor& attn);

/// Per head, the variance over the keys a query attends (weights > 0) of log A_ij, which
/// is the score s_ij the softmax saw minus the row's log-sum-exp: the variance of the
/// scores, scale, temperature and relative bias included, averaged over queries and
/// images (of GPSA's mixed weights, the logs of the mixture). Returns (H).
torch::Tensor score_variance(const torch::Tensor& attn);

/// Attention rollout (Abnar & Zuidema 2020): per block the head-mean attention mixed with
/// the identity (0.5 A + 0.5 I, rows renormalised), multiplied through the blocks. Blocks
/// with fewer tokens (GPSA blocks before the class token joins) are embedded with the
/// class token attending to itself. Returns (B, N, N) over the last block's tokens.
torch::Tensor attention_rollout(const std::vector<torch::Tensor>& attn);

/// The kernel a patch query applies: its weights over the patch keys, renormalised and
/// reshaped to the grid. attn (B, H, N, N) -> (B, H, grid, grid) for query patch `query`.
torch::Tensor query_kernel(const torch::Tensor& attn, int64_t grid, int64_t prefix, int64_t query);

/// Running sums of the patch queries' weights on the patch keys over images, for
/// kernel_variance over any number of batches.
struct KernelMoments {
  torch::Tensor sum, sum_sq;  ///< (H, P, P) double
  int64_t count = 0;          ///< images added
  void add(const torch::Tensor& attn, int64_t grid, int64_t prefix);
  /// The variance across images of each weight, averaged over heads and the (query, key)
  /// pairs the model can attend (weights that are 0 for every image -- outside a local
  /// window -- are left out, so windows of different sizes compare).
  double variance() const;
};

/// How much the kernels vary with the image (KernelMoments::variance of one batch): 0 for
/// any convolution, whose kernel is the same for every image.
double kernel_variance(const torch::Tensor& attn, int64_t grid, int64_t prefix);

}  // namespace biaslab
