#pragma once
// Image to patch tokens: a stride-p p x p convolution (ViT, Dosovitskiy et al. 2021,
// arXiv:2010.11929). (B, C, H, W) -> (B, (H/p)(W/p), D), tokens in row-major grid order.
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

namespace biaslab {

struct PatchEmbedOptions {
  PatchEmbedOptions(int64_t img_size, int64_t patch_size, int64_t in_chans, int64_t embed_dim)
      : img_size_(img_size), patch_size_(patch_size), in_chans_(in_chans), embed_dim_(embed_dim) {}
  /// Side of the (square) input image; must be divisible by patch_size.
  TORCH_ARG(int64_t, img_size);
  /// Side of a patch.
  TORCH_ARG(int64_t, patch_size);
  /// Input channels.
  TORCH_ARG(int64_t, in_chans);
  /// Token width.
  TORCH_ARG(int64_t, embed_dim);
};

class PatchEmbedImpl : public torch::nn::Cloneable<PatchEmbedImpl> {
 public:
  explicit PatchEmbedImpl(const PatchEmbedOptions& options);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);
  int64_t grid_size() const { return options.img_size() / options.patch_size(); }
  int64_t num_patches() const { return grid_size() * grid_size(); }

  PatchEmbedOptions options;
  torch::nn::Conv2d proj{nullptr};
};
TORCH_MODULE(PatchEmbed);

}  // namespace biaslab
