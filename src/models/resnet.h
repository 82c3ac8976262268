#pragma once
// ResNet (He et al. 2016, arXiv:1512.03385) with BasicBlocks or Bottlenecks, two stems:
//  - cifar stem: one 3x3 conv, stages at full resolution (ResNet-20/32/56: depth 6n+2);
//  - imagenet stem: 7x7 stride-2 conv + 3x3 max-pool (ResNet-18/34/50, torchvision layout).
// Differences from the CIFAR paper: shortcuts that change shape are 1x1 conv + BN
// projections (option B) rather than zero-padding (option A).
// Submodule names follow torchvision: conv1, bn1, layer1.0.conv1, ..., downsample, fc.
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "export/scriptable.h"
#include "models/classifier.h"

namespace biaslab {

struct BasicBlockOptions {
  BasicBlockOptions(int64_t in_channels, int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  /// Stride of the first 3x3 conv (2 halves the resolution).
  TORCH_ARG(int64_t, stride) = 1;
  /// batchnorm | groupnorm | layernorm | none (layers/norm.h)
  TORCH_ARG(std::string, norm) = "batchnorm";
  /// false: no skip connection (a "plain" network, He et al. 2016 Fig. 4).
  TORCH_ARG(bool, residual) = true;
};

/// conv3x3-norm-ReLU-conv3x3-norm, plus the (projected) input when residual, then ReLU.
class BasicBlockImpl : public torch::nn::Cloneable<BasicBlockImpl>, public Scriptable {
 public:
  explicit BasicBlockImpl(const BasicBlockOptions& options);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;

  BasicBlockOptions options;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::AnyModule bn1, bn2;              // named as torchvision's, whatever the norm kind
  torch::nn::Sequential downsample{nullptr};  // null when the shapes match or residual is off
};
TORCH_MODULE(BasicBlock);

/// 1x1 (reduce) - 3x3 (stride) - 1x1 (expand x4) with norms, plus the (projected)
/// input when residual, then ReLU (torchvision's ResNet v1.5 Bottleneck).
class BottleneckImpl : public torch::nn::Cloneable<BottleneckImpl>, public Scriptable {
 public:
  static constexpr int64_t kExpansion = 4;
  /// options.out_channels is the bottleneck width; the block outputs 4x that.
  explicit BottleneckImpl(const BasicBlockOptions& options);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& x);
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;

  BasicBlockOptions options;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::AnyModule bn1, bn2, bn3;
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

struct ResNetOptions {
  explicit ResNetOptions(int64_t num_classes) : num_classes_(num_classes) {}
  /// 0: no classifier (`fc` stays null) and forward returns the pooled features, as
  /// timm's num_classes=0; the hybrid ViT uses such a trunk as its tokenizer.
  TORCH_ARG(int64_t, num_classes);
  /// false (needs num_classes 0): forward returns the last stage's map unpooled.
  TORCH_ARG(bool, global_pool) = true;
  TORCH_ARG(int64_t, in_chans) = 3;
  /// "cifar" (3x3 conv) or "imagenet" (7x7 stride-2 conv + max-pool).
  TORCH_ARG(std::string, stem) = "cifar";
  /// "basic" (two 3x3 convs) or "bottleneck" (1x1-3x3-1x1, 4x expansion).
  TORCH_ARG(std::string, block) = "basic";
  /// Blocks per stage; every stage after the first halves the resolution.
  TORCH_ARG(std::vector<int64_t>, layers) = std::vector<int64_t>{3, 3, 3};
  /// Channels per stage (bottleneck width for "bottleneck", whose stages output 4x);
  /// the stem outputs widths[0].
  TORCH_ARG(std::vector<int64_t>, widths) = std::vector<int64_t>{16, 32, 64};
  /// Zero-init each block's last norm gain so blocks start as identities (Goyal et al. 2017).
  TORCH_ARG(bool, zero_init_residual) = false;
  /// batchnorm | groupnorm | layernorm | none, in the stem and every block.
  TORCH_ARG(std::string, norm) = "batchnorm";
  /// false: every block without its skip connection.
  TORCH_ARG(bool, residual) = true;
};

class ResNetImpl : public Classifier, public Scriptable {
 public:
  explicit ResNetImpl(const ResNetOptions& options);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::jit::Module to_script(script::Builder& b, const std::string& path) const override;
  /// stem (conv1, bn1, ReLU, maxpool), layer1..N, head (pool, fc; without fc or
  /// global_pool only what forward does).
  std::vector<Stage> stages() override;
  /// Features before the classifier: (B, num_features()).
  torch::Tensor forward_features(const torch::Tensor& x);
  /// The last stage's output before pooling: (B, num_features(), s, s), s = feature_size(H).
  torch::Tensor forward_feature_map(const torch::Tensor& x);
  /// Channels of the last stage.
  int64_t num_features() const;
  /// Side of the last stage's map for an image side `image_size` (each stride 2 rounds up).
  int64_t feature_size(int64_t image_size) const;

  ResNetOptions options;
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::AnyModule bn1;
  torch::nn::MaxPool2d maxpool{nullptr};  // imagenet stem only
  std::vector<torch::nn::Sequential> layers;  // registered as layer1, layer2, ...
  torch::nn::Linear fc{nullptr};

 private:
  /// conv1, bn1, ReLU, and the max-pool of the imagenet stem.
  torch::Tensor stem_forward(const torch::Tensor& x);
};

}  // namespace biaslab
