// TorchScript of the ResNet (models/resnet.h): blocks with or without their skip
// connections, the cifar or imagenet stem, with or without pooling and classifier (a
// hybrid's trunk). At the root, the model checks its input's shape.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "models/resnet.h"

namespace biaslab {
using script::join;

namespace {

std::string residual_tail(bool residual, bool has_downsample) {
  if (!residual) return "    return torch.relu(y)\n";
  return has_downsample ? "    return torch.relu(y + self.downsample.forward(x))\n" : "    return torch.relu(y + x)\n";
}

}  // namespace

torch::jit::Module BasicBlockImpl::to_script(script::Builder& b, const std::string& path) const {
  script::Members mem;
  mem.modules = {{"conv1", b.module(*conv1, join(path, "conv1"))}, {"bn1", b.module(bn1, join(path, "bn1"))},
                 {"conv2", b.module(*conv2, join(path, "conv2"))}, {"bn2", b.module(bn2, join(path, "bn2"))}};
  if (downsample) mem.modules.emplace_back("downsample", b.module(*downsample, join(path, "downsample")));
  return b.make("BasicBlock",
                "    y = torch.relu(self.bn1.forward(self.conv1.forward(x)))\n"
                "    y = self.bn2.forward(self.conv2.forward(y))\n" +
                    residual_tail(options.residual(), bool(downsample)),
                mem);
}

torch::jit::Module BottleneckImpl::to_script(script::Builder& b, const std::string& path) const {
  script::Members mem;
  mem.modules = {{"conv1", b.module(*conv1, join(path, "conv1"))}, {"bn1", b.module(bn1, join(path, "bn1"))},
                 {"conv2", b.module(*conv2, join(path, "conv2"))}, {"bn2", b.module(bn2, join(path, "bn2"))},
                 {"conv3", b.module(*conv3, join(path, "conv3"))}, {"bn3", b.module(bn3, join(path, "bn3"))}};
  if (downsample) mem.modules.emplace_back("downsample", b.module(*downsample, join(path, "downsample")));
  return b.make("Bottleneck",
                "    y = torch.relu(self.bn1.forward(self.conv1.forward(x)))\n"
                "    y = torch.relu(self.bn2.forward(self.conv2.forward(y)))\n"
                "    y = self.bn3.forward(self.conv3.forward(y))\n" +
                    residual_tail(options.residual(), bool(downsample)),
                mem);
}

torch::jit::Module ResNetImpl::to_script(script::Builder& b, const std::string& path) const {
  script::Members mem = b.start(path);
  mem.modules = {{"conv1", b.module(*conv1, join(path, "conv1"))}, {"bn1", b.module(bn1, join(path, "bn1"))}};
  std::string s = b.input_check(path, options.in_chans());
  s += "    x = torch.relu(self.bn1.forward(self.conv1.forward(x)))\n";
  if (maxpool) {
    mem.modules.emplace_back("maxpool", b.module(*maxpool, join(path, "maxpool")));
    s += "    x = self.maxpool.forward(x)\n";
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string name = "layer" + std::to_string(i + 1);
    mem.modules.emplace_back(name, b.module(*layers[i], join(path, name)));
    s += "    x = self." + name + ".forward(x)\n";
  }
  if (options.global_pool()) s += "    x = x.mean([2, 3])\n";
  if (fc) {
    mem.modules.emplace_back("fc", b.module(*fc, join(path, "fc")));
    s += "    x = self.fc.forward(x)\n";
  }
  return b.make("ResNet", s + "    return x\n", mem);
}

}  // namespace biaslab
