#pragma once
// A native model as a TorchScript module, built with public API only: LibTorch has no
// script()/trace() for a C++ torch::nn::Module, so every native module becomes a
// torch::jit::Module with the same submodule, parameter and buffer names, and a
// `forward` written in TorchScript from aten builtins (torch.linear, torch.conv2d, ...)
// for its configuration. Modules with the same code and member layout share one class
// (Linear, Conv2d, Block, ...), so the archive's code reads like hand-written modules.
// Each module writes its own TorchScript (export/scriptable.h: biaslab's layers and models
// in a <file>_script.cpp beside their forward; LibTorch's in export/torch_nn_script.cpp);
// the module walk and the classes are export/script_builder.h's.
//
// The translation is of the model in eval mode, in float32: dropout, drop-path and
// BatchNorm's batch statistics are training-only and have no counterpart.
// Besides the native state, attention modules carry their precomputed index buffers
// (attn_mask, relative_position_index, rel_pos).
#include <string>
#include <vector>

namespace torch {
namespace nn {
class Module;
}
namespace jit {
struct Module;
}
}  // namespace torch

namespace biaslab {

class Classifier;

/// Attributes attached to the root module (readable as `module.class_names` etc.).
struct ScriptMetadata {
  std::vector<std::string> class_names;
  int64_t image_size = 0;
  int64_t in_chans = 0;
  std::vector<double> mean, std;  ///< normalisation on the [0, 1] scale
  std::string family, preset, biaslab_version;
};

/// The TorchScript twin of `model` (any registered family and option), in eval mode.
/// Throws biaslab::Error naming the module path for a module type it cannot translate.
torch::jit::Module to_torchscript(const Classifier& model, const ScriptMetadata& meta);

}  // namespace biaslab
