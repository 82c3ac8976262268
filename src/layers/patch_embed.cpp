#include "layers/patch_embed.h"

#include <torch/torch.h>

namespace biaslab {

PatchEmbedImpl::PatchEmbedImpl(const PatchEmbedOptions& options_) : options(options_) { reset(); }

void PatchEmbedImpl::reset() {
  TORCH_CHECK(options.img_size() % options.patch_size() == 0, "PatchEmbed: patch size ", options.patch_size(),
              " does not divide image size ", options.img_size());
  proj = register_module("proj", torch::nn::Conv2d(torch::nn::Conv2dOptions(
      options.in_chans(), options.embed_dim(), options.patch_size()).stride(options.patch_size())));
}

torch::Tensor PatchEmbedImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.size(2) == options.img_size() && x.size(3) == options.img_size(), "PatchEmbed: expected ",
              options.img_size(), "x", options.img_size(), " input, got ", x.sizes());
  return proj(x).flatten(2).transpose(1, 2);  // (B, D, h, w) -> (B, hw, D)
}

}  // namespace biaslab
