#pragma once
// Image to patch tokens: a stride-p p x p convolution (ViT, Dosovitskiy et al. 2021,
// arXiv:2010.11929). (B, C, H, W) -> (B, (H/p)(W/p), D), tokens in row-major grid order.
// With a `backbone` (a CNN: ResNet stages for ViT-hybrid, a CCT conv tokenizer) the
// projection patches the backbone's feature map instead of the image (timm's HybridEmbed).
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include "export/scriptable.h"

namespace biaslab {

struct PatchEmbedOptions {
  PatchEmbedOptions(int64_t img_size, int64_t patch_size, int64_t in_chans, int64_t embed_dim)
      : img_size_(img_size), patch_size_(patch_size), in_chans_(in_chans), embed_dim_(embed_dim) {}
  /// Side of the (square) map the projection patches: the image, or the backbone's
  /// output map; must be divisible by patch_size.
  TORCH_ARG(int64_t, img_size);
  /// Side of a patch.
  TORCH_ARG(int64_t, patch_size);
  /// Channels of that map.
  TORCH_ARG(int64_t, in_chans);
  /// Token width.
  TORCH_ARG(int64_t, embed_dim);
  /// Optional CNN applied to the image first (registered as `backbone`); empty = none.
  TORCH_ARG(torch::nn::AnyModule, backbone);
};

class PatchEmbedImpl : public torch::nn::Cloneable<PatchEmbedImpl>, public Scriptable {
 public:
  explicit PatchEmbedImpl(const PatchEmbedOptions& options);
  void reset() override;
  /// Image (through the backbone, if any) to tokens.
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
  /// The projection alone: map (B, in_chans, img_size, img_size) to tokens.
  torch::Tensor project(const torch::Tensor& map);
  int64_t grid_size() const { return options.img_size() / options.patch_size(); }
  int64_t num_patches() const { return grid_size() * grid_size(); }

  PatchEmbedOptions options;
  torch::nn::AnyModule backbone;  // empty without a CNN front end
  torch::nn::Conv2d proj{nullptr};
};
TORCH_MODULE(PatchEmbed);

}  // namespace biaslab
