#pragma once
// Stochastic depth (Huang et al. 2016, arXiv:1603.09382): in training, each sample's
// residual branch is dropped with probability p and kept ones are scaled by 1/(1-p).
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include "export/scriptable.h"

namespace biaslab {

class DropPathImpl : public torch::nn::Cloneable<DropPathImpl> {
 public:
  explicit DropPathImpl(double p = 0.0) : p(p) {}
  void reset() override {}
  torch::Tensor forward(const torch::Tensor& x);
  double p;
};
TORCH_MODULE(DropPath);

/// Per-channel learnable gain on a residual branch (LayerScale, Touvron et al. 2021,
/// CaiT, arXiv:2103.17239); parameter `gamma`, initialised to `init`.
class LayerScaleImpl : public torch::nn::Cloneable<LayerScaleImpl>, public Scriptable {
 public:
  LayerScaleImpl(int64_t dim, double init) : dim(dim), init(init) { reset(); }
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x) { return x * gamma; }
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
  int64_t dim;
  double init;
  torch::Tensor gamma;
};
TORCH_MODULE(LayerScale);

}  // namespace biaslab
