#pragma once
// Weights in and out of biaslab in the forms Python users have at hand.
//
// Reading (model.init_from) accepts either
//   torch.save(dict(model.state_dict()), "weights.pt")   # a dict of tensors, also nested
//                                                       # under "state_dict" / "model"
//   torch.jit.script(model).save("weights.pt")           # any TorchScript module,
//                                                       # biaslab's export archives too
// (LibTorch cannot unpickle the OrderedDict that state_dict() returns as such: its
// `_metadata` attribute; `dict(...)` drops it, and the error says so.)
//
// Names: biaslab's ResNets use torchvision's names; its ViT uses timm's. A torchvision
// VisionTransformer state dict (conv_proj, class_token, encoder.layers.encoder_layer_N...)
// is recognised and renamed on the way in, and `Names::torchvision` renames on the way
// out, so `torchvision.models.vit_b_16().load_state_dict(torch.load(F))` accepts it.
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch::nn {
class Module;
}

namespace biaslab {

using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

/// Reads a state dict file (see above). Throws CheckpointError naming the file and what
/// was expected.
StateDict read_state_dict(const std::string& path);

enum class Names { native, torchvision };

/// Whether `sd` uses torchvision's VisionTransformer names.
bool has_torchvision_vit_names(const StateDict& sd);

/// torchvision ViT name <-> biaslab (timm) name; a name outside the ViT layout is returned
/// unchanged.
std::string vit_name_from_torchvision(const std::string& key);
std::string vit_name_to_torchvision(const std::string& key);

/// Copies `sd` into `model`'s parameters and buffers, renaming torchvision ViT keys
/// first. Every parameter and buffer must be present with its shape, except those whose
/// name starts with one of `skip` (e.g. "head." or "fc." to train a new classifier),
/// which keep their values; keys of `sd` the model lacks are errors too. Throws
/// CheckpointError naming `source` and listing the missing, unexpected and wrongly
/// shaped keys. Returns the number of tensors copied.
size_t load_state_dict(torch::nn::Module& model, const StateDict& sd, const std::vector<std::string>& skip,
                       const std::string& source);

/// The model's parameters and buffers, in registration order, named as `names` says.
StateDict model_state_dict(const torch::nn::Module& model, Names names);

/// `sd` (tensors copied to the CPU) as the bytes of a torch.save file of a dict: what
/// `torch.load` reads, also with weights_only=True.
std::string torch_save_bytes(const StateDict& sd);

/// Writes torch_save_bytes(sd) to `path` atomically.
void write_state_dict(const StateDict& sd, const std::string& path);

}  // namespace biaslab
