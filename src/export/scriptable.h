#pragma once
// A module that knows its own TorchScript (export/torchscript.h). Each of biaslab's layers
// and models implements `to_script` in a `<file>_script.cpp` beside its forward, so a new
// layer or knob changes its TorchScript in the same place as its C++ forward; LibTorch's
// own modules (Linear, Conv2d, ...) are translated in export/torch_nn_script.cpp.
// Light on purpose: layer headers include it; the translations include export/script_builder.h.
#include <string>

namespace torch {
namespace jit {
struct Module;
}
}  // namespace torch

namespace biaslab {
namespace script {
class Builder;
}

class Scriptable {
 public:
  virtual ~Scriptable() = default;
  /// This module, found at `path` in the model ("" for the root), as a jit module with the
  /// same submodule, parameter and buffer names and a `forward` in TorchScript for its
  /// configuration, in eval mode. Children are translated through `b.module(...)`.
  virtual torch::jit::Module to_script(script::Builder& b, const std::string& path) const = 0;
};

}  // namespace biaslab
