#include "models/resnet.h"

#include <torch/torch.h>

#include "layers/norm.h"

namespace biaslab {
namespace nn = torch::nn;

namespace {
nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}
}  // namespace

BasicBlockImpl::BasicBlockImpl(const BasicBlockOptions& options_) : options(options_) { reset(); }

void BasicBlockImpl::reset() {
  const int64_t in = options.in_channels(), out = options.out_channels(), s = options.stride();
  conv1 = register_module("conv1", conv(in, out, 3, s));
  bn1 = make_image_norm(options.norm(), out);
  register_module("bn1", bn1.ptr());
  conv2 = register_module("conv2", conv(out, out, 3, 1));
  bn2 = make_image_norm(options.norm(), out);
  register_module("bn2", bn2.ptr());
  if (options.residual() && (s != 1 || in != out)) {
    downsample = nn::Sequential(conv(in, out, 1, s));
    downsample->push_back(make_image_norm(options.norm(), out));
    register_module("downsample", downsample);
  }
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  auto y = torch::relu(bn1.forward(conv1(x)));
  y = bn2.forward(conv2(y));
  if (!options.residual()) return torch::relu(y);
  auto identity = downsample ? downsample->forward(x) : x;
  return torch::relu(y + identity);
}

BottleneckImpl::BottleneckImpl(const BasicBlockOptions& options_) : options(options_) { reset(); }

void BottleneckImpl::reset() {
  const int64_t in = options.in_channels(), width = options.out_channels(), s = options.stride();
  const int64_t out = width * kExpansion;
  auto norm = [&](int64_t c) { return make_image_norm(options.norm(), c); };
  conv1 = register_module("conv1", conv(in, width, 1, 1));
  bn1 = norm(width);
  register_module("bn1", bn1.ptr());
  conv2 = register_module("conv2", conv(width, width, 3, s));
  bn2 = norm(width);
  register_module("bn2", bn2.ptr());
  conv3 = register_module("conv3", conv(width, out, 1, 1));
  bn3 = norm(out);
  register_module("bn3", bn3.ptr());
  if (options.residual() && (s != 1 || in != out)) {
    downsample = nn::Sequential(conv(in, out, 1, s));
    downsample->push_back(norm(out));
    register_module("downsample", downsample);
  }
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  auto y = torch::relu(bn1.forward(conv1(x)));
  y = torch::relu(bn2.forward(conv2(y)));
  y = bn3.forward(conv3(y));
  if (!options.residual()) return torch::relu(y);
  auto identity = downsample ? downsample->forward(x) : x;
  return torch::relu(y + identity);
}

ResNetImpl::ResNetImpl(const ResNetOptions& options_) : options(options_) {
  const auto& depths = options.layers();
  const auto& widths = options.widths();
  TORCH_CHECK(!depths.empty() && depths.size() == widths.size(), "ResNet: need one width per stage, got ",
              depths.size(), " stages and ", widths.size(), " widths");
  TORCH_CHECK(options.stem() == "cifar" || options.stem() == "imagenet", "ResNet: unknown stem '",
              options.stem(), "'");
  TORCH_CHECK(options.block() == "basic" || options.block() == "bottleneck", "ResNet: unknown block '",
              options.block(), "'");
  TORCH_CHECK(options.global_pool() || options.num_classes() == 0, "ResNet: global_pool false needs num_classes 0");
  const bool imagenet = options.stem() == "imagenet";
  const bool bottleneck = options.block() == "bottleneck";
  conv1 = register_module("conv1", imagenet ? conv(options.in_chans(), widths[0], 7, 2)
                                            : conv(options.in_chans(), widths[0], 3, 1));
  bn1 = make_image_norm(options.norm(), widths[0]);
  register_module("bn1", bn1.ptr());
  if (imagenet) maxpool = register_module("maxpool", nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));

  int64_t in = widths[0];
  for (size_t s = 0; s < depths.size(); ++s) {
    nn::Sequential stage;
    for (int64_t b = 0; b < depths[s]; ++b) {
      const int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      const auto block = BasicBlockOptions(in, widths[s]).stride(stride).norm(options.norm()).residual(options.residual());
      if (bottleneck) {
        stage->push_back(Bottleneck(block));
        in = widths[s] * BottleneckImpl::kExpansion;
      } else {
        stage->push_back(BasicBlock(block));
        in = widths[s];
      }
    }
    layers.push_back(register_module("layer" + std::to_string(s + 1), stage));
  }
  if (options.num_classes() > 0) fc = register_module("fc", nn::Linear(in, options.num_classes()));

  // torchvision's initialisation: He normal (fan_out) for convs, BN at (1, 0).
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<nn::BatchNorm2d>()) {
      bn->weight.fill_(1.0);
      bn->bias.zero_();
    }
  }
  if (options.zero_init_residual()) {
    for (auto& m : modules(false)) {
      torch::nn::AnyModule* last = nullptr;
      if (auto* basic = m->as<BasicBlock>()) last = &basic->bn2;
      if (auto* bottle = m->as<Bottleneck>()) last = &bottle->bn3;
      if (!last) continue;
      if (auto* gain = last->ptr()->named_parameters(false).find("weight")) gain->zero_();
    }
  }
}

torch::Tensor ResNetImpl::stem_forward(const torch::Tensor& x) {
  auto y = torch::relu(bn1.forward(conv1(x)));
  return maxpool ? maxpool(y) : y;
}

torch::Tensor ResNetImpl::forward_feature_map(const torch::Tensor& x) {
  auto y = stem_forward(x);
  for (auto& stage : layers) y = stage->forward(y);
  return y;
}

std::vector<Stage> ResNetImpl::stages() {
  std::vector<Stage> out;
  std::vector<std::string> stem = {"conv1", "bn1"};
  if (maxpool) stem.push_back("maxpool");
  out.push_back({"stem", stem, [this](const torch::Tensor& x) { return stem_forward(x); }});
  for (size_t s = 0; s < layers.size(); ++s) {
    auto stage = layers[s];
    const std::string name = "layer" + std::to_string(s + 1);
    out.push_back({name, {name}, [stage](const torch::Tensor& x) mutable { return stage->forward(x); }});
  }
  if (options.global_pool())
    out.push_back({"head", fc ? std::vector<std::string>{"fc"} : std::vector<std::string>{},
                   [this](const torch::Tensor& x) {
                     auto pooled = x.mean({2, 3});
                     return fc ? fc(pooled) : pooled;
                   }});
  return out;
}

torch::Tensor ResNetImpl::forward_features(const torch::Tensor& x) {
  return forward_feature_map(x).mean({2, 3});  // global average pool: (B, C, H, W) -> (B, C)
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  if (!options.global_pool()) return forward_feature_map(x);
  auto features = forward_features(x);
  return fc ? fc(features) : features;
}

int64_t ResNetImpl::num_features() const {
  return options.widths().back() * (options.block() == "bottleneck" ? BottleneckImpl::kExpansion : 1);
}

int64_t ResNetImpl::feature_size(int64_t image_size) const {
  // Every stride-2 layer (7x7 conv, max-pool, first block of stages 2..) maps s to ceil(s / 2).
  const int64_t halvings = int64_t(options.layers().size()) - 1 + (options.stem() == "imagenet" ? 2 : 0);
  for (int64_t i = 0; i < halvings; ++i) image_size = (image_size + 1) / 2;
  return image_size;
}

}  // namespace biaslab
