#include "layers/patch_embed.h"

#include <torch/torch.h>

namespace biaslab {

PatchEmbedImpl::PatchEmbedImpl(const PatchEmbedOptions& options_) : options(options_) { reset(); }

void PatchEmbedImpl::reset() {
  TORCH_CHECK(options.img_size() % options.patch_size() == 0, "PatchEmbed: patch size ", options.patch_size(),
              " does not divide image size ", options.img_size());
  backbone = options.backbone();
  if (!backbone.is_empty()) register_module("backbone", backbone.ptr());
  proj = register_module("proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(
      options.in_chans(), options.embed_dim(), options.patch_size()).stride(options.patch_size())));
}

torch::Tensor PatchEmbedImpl::forward(const torch::Tensor& x) {
  return project(backbone.is_empty() ? x : backbone.forward(x));
}

torch::Tensor PatchEmbedImpl::project(const torch::Tensor& map) {
  TORCH_CHECK(map.size(2) == options.img_size() && map.size(3) == options.img_size(), "PatchEmbed: expected a ",
              options.img_size(), "x", options.img_size(), backbone.is_empty() ? " input" : " backbone feature map",
              ", got ", map.sizes());
  return proj(map).flatten(2).transpose(1, 2);  // (B, D, h, w) -> (B, hw, D)
}

}  // namespace biaslab
