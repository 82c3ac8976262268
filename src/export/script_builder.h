#pragma once
// What a module's TorchScript translation (Scriptable::to_script) builds with: its members,
// its `forward` as TorchScript text, and its children's translations through the module walk.
// Only the *_script.cpp files include this header.
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/ordered_dict.h>

#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace biaslab::script {

/// A float literal TorchScript reads back as the same double (and as a float, never an int).
std::string lit(double v);
/// A TorchScript list of ints: "[1, 2]".
std::string ints(std::initializer_list<int64_t> v);
/// The path of the child `name` of the module at `path` ("blocks" + "0" = "blocks.0").
std::string join(const std::string& path, const std::string& name);

/// The members of one module, registered in this order.
struct Members {
  std::vector<std::pair<std::string, torch::Tensor>> params, buffers;
  std::vector<std::pair<std::string, torch::jit::Module>> modules;
  std::vector<std::tuple<std::string, c10::TypePtr, c10::IValue>> attributes;
};

/// Builds the jit modules of one model: one class per distinct (kind, code, member layout),
/// named after the kind (Linear, Block, Block_1, ...), so the archive's code reads like
/// hand-written modules.
class Builder {
 public:
  /// `image_size`: the side of the images the root checks its input against;
  /// `root_attributes`: the metadata the root module carries (class_names, ...).
  Builder(int64_t image_size, Members root_attributes);

  /// The module walk: the TorchScript twin of `m`, the module at `path`. Throws
  /// biaslab::Error naming the path for a module type without a translation.
  torch::jit::Module module(const torch::nn::Module& m, const std::string& path);
  torch::jit::Module module(const torch::nn::AnyModule& m, const std::string& path);

  /// A module of class `kind` with members `m` whose forward(self, x: Tensor) -> Tensor
  /// runs `body` (TorchScript, indented by four spaces).
  torch::jit::Module make(const std::string& kind, const std::string& body, const Members& m);
  /// Sequential-like: `children` applied in order.
  torch::jit::Module chain(const std::string& kind,
                           const torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>>& children,
                           const std::string& path);

  /// The members the module at `path` starts from: the root's carry the metadata attributes.
  Members start(const std::string& path) const;
  /// For the root: an assert on the input's shape (B, channels, image_size, image_size),
  /// a clear error for consumers; "" elsewhere.
  std::string input_check(const std::string& path, int64_t channels) const;

 private:
  int64_t image_size_;
  Members root_attributes_;
  std::shared_ptr<torch::jit::CompilationUnit> cu_ = std::make_shared<torch::jit::CompilationUnit>();
  std::map<std::string, c10::ClassTypePtr> types_;
  std::map<std::string, int> counts_;
};

/// LibTorch's own modules (Linear, Conv2d, BatchNorm2d, ..., Sequential), which cannot
/// implement Scriptable: their translation, or nothing for another type
/// (export/torch_nn_script.cpp).
std::optional<torch::jit::Module> torch_nn_script(const torch::nn::Module& m, Builder& b, const std::string& path);

}  // namespace biaslab::script
