#include "export/weights.h"

#include <torch/script.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/import_read.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "core/errors.h"
#include "core/fs.h"
#include "core/torch_compat.h"

namespace biaslab {
namespace fs = std::filesystem;
namespace {

// torchvision's VisionTransformer names next to biaslab's (timm's): {i} is a block
// index, {p} weight or bias; both sides hold the same placeholders in the same order.
const std::vector<std::pair<std::string, std::string>> kVitNames = {
    {"class_token", "cls_token"},
    {"conv_proj.{p}", "patch_embed.proj.{p}"},
    {"encoder.pos_embedding", "pos_embed"},
    {"encoder.layers.encoder_layer_{i}.ln_1.{p}", "blocks.{i}.norm1.{p}"},
    {"encoder.layers.encoder_layer_{i}.self_attention.in_proj_{p}", "blocks.{i}.attn.qkv.{p}"},
    {"encoder.layers.encoder_layer_{i}.self_attention.out_proj.{p}", "blocks.{i}.attn.proj.{p}"},
    {"encoder.layers.encoder_layer_{i}.ln_2.{p}", "blocks.{i}.norm2.{p}"},
    {"encoder.layers.encoder_layer_{i}.mlp.0.{p}", "blocks.{i}.mlp.fc1.{p}"},
    {"encoder.layers.encoder_layer_{i}.mlp.3.{p}", "blocks.{i}.mlp.fc2.{p}"},
    {"encoder.layers.encoder_layer_{i}.mlp.linear_1.{p}", "blocks.{i}.mlp.fc1.{p}"},  // torchvision < 0.13
    {"encoder.layers.encoder_layer_{i}.mlp.linear_2.{p}", "blocks.{i}.mlp.fc2.{p}"},
    {"encoder.ln.{p}", "norm.{p}"},
    {"heads.head.{p}", "head.{p}"},
};

std::regex name_pattern(const std::string& name) {
  std::string out = "^";
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 3, "{i}") == 0) {
      out += "(\\d+)";
      i += 2;
    } else if (name.compare(i, 3, "{p}") == 0) {
      out += "(weight|bias)";
      i += 2;
    } else {
      out += name[i] == '.' ? std::string("\\.") : std::string(1, name[i]);
    }
  }
  return std::regex(out + "$");
}

// `name` with its placeholders replaced by the groups of `m`, in order.
std::string fill(const std::string& name, const std::smatch& m) {
  std::string out;
  size_t group = 1;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 3, "{i}") == 0 || name.compare(i, 3, "{p}") == 0) {
      out += m[group++].str();
      i += 2;
    } else {
      out += name[i];
    }
  }
  return out;
}

std::string rename(const std::string& key, bool from_torchvision) {
  for (const auto& [tv, native] : kVitNames) {
    std::smatch m;
    if (std::regex_match(key, m, name_pattern(from_torchvision ? tv : native)))
      return fill(from_torchvision ? native : tv, m);
  }
  return key;
}

StateDict from_dict(const c10::IValue& value, const std::string& path) {
  const auto dict = value.toGenericDict();
  // A checkpoint-like wrapper: {"state_dict": {...}} or {"model": {...}}.
  for (const char* wrapper : {"state_dict", "model"}) {
    for (const auto& item : dict) {
      if (item.key().isString() && item.key().toStringRef() == wrapper && item.value().isGenericDict())
        return from_dict(item.value(), path);
    }
  }
  StateDict sd;
  for (const auto& item : dict) {
    if (!item.key().isString())
      throw CheckpointError(path + ": a state dict must have string keys, found a " + item.key().tagKind() + " key");
    if (!item.value().isTensor())
      throw CheckpointError(path + ": entry '" + item.key().toStringRef() + "' is a " + item.value().tagKind() +
                            ", expected a tensor");
    sd.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return sd;
}

std::string shape(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// "a, b, c and 7 more"
std::string listing(const std::vector<std::string>& items) {
  std::string out;
  const size_t shown = std::min<size_t>(items.size(), 8);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
  return out;
}

}  // namespace

std::string vit_name_from_torchvision(const std::string& key) { return rename(key, true); }
std::string vit_name_to_torchvision(const std::string& key) { return rename(key, false); }

bool has_torchvision_vit_names(const StateDict& sd) {
  for (const auto& [key, t] : sd)
    if (key == "class_token" || key == "conv_proj.weight" || key.rfind("encoder.layers.", 0) == 0) return true;
  return false;
}

StateDict read_state_dict(const std::string& path) {
  if (!fs::is_regular_file(path)) throw CheckpointError(path + ": no such file");
  std::string pickle_error;
  try {
    // torch.save's zip layout, every tensor restored on the CPU whatever device it was
    // saved from (torch::pickle_load would restore CUDA tensors onto a CUDA device).
    caffe2::serialize::PyTorchStreamReader reader(path);
    const c10::IValue value = torch::jit::readArchiveAndTensors("data", "", "", c10::nullopt, c10::nullopt,
                                                                c10::Device(c10::kCPU), reader);
    if (!value.isGenericDict())
      throw CheckpointError(path + ": holds a " + value.tagKind() + ", expected a dict of tensors");
    return from_dict(value, path);
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    pickle_error = compat::error_message(e);
  }
  try {
    torch::jit::Module m = torch::jit::load(path, torch::kCPU);
    // A biaslab archive's attention modules carry index buffers the native model derives
    // from its options (export/torchscript.h); they are not weights.
    const bool archive = m.hasattr("biaslab_version");
    auto derived = [&](const std::string& name) {
      const std::string last = name.substr(name.rfind('.') + 1);
      return archive && (last == "attn_mask" || last == "relative_position_index" || last == "rel_pos");
    };
    StateDict sd;
    for (const auto& p : m.named_parameters()) sd.emplace_back(p.name, p.value);
    for (const auto& b : m.named_buffers())
      if (!derived(b.name)) sd.emplace_back(b.name, b.value);
    return sd;
  } catch (const std::exception& e) {
    std::string hint;
    if (pickle_error.find("GenericDict") != std::string::npos)
      hint = " It looks like torch.save(model.state_dict(), F): LibTorch cannot read the OrderedDict's _metadata; "
             "save torch.save(dict(model.state_dict()), F) instead.";
    if (pickle_error.find("opcode") != std::string::npos)
      hint = " LibTorch's unpickler lacks some of Python's opcodes (a dict of exactly one entry, or one holding "
             "non-tensor values, is pickled with SETITEM): save the state dict alone, "
             "torch.save(dict(model.state_dict()), F).";
    throw CheckpointError(path + ": neither a dict of tensors saved by torch.save (" + pickle_error +
                          ") nor a TorchScript module (" + compat::error_message(e) + ")." + hint);
  }
}

size_t load_state_dict(torch::nn::Module& model, const StateDict& sd_in, const std::vector<std::string>& skip,
                       const std::string& source) {
  const bool torchvision = has_torchvision_vit_names(sd_in);
  std::map<std::string, at::Tensor> given;
  for (const auto& [key, t] : sd_in) given[torchvision ? vit_name_from_torchvision(key) : key] = t;
  std::vector<bool> prefix_used(skip.size(), false);
  auto skipped = [&](const std::string& name) -> bool {
    for (size_t i = 0; i < skip.size(); ++i) {
      const std::string& prefix = skip[i];
      if (name == prefix || name.rfind(prefix.back() == '.' ? prefix : prefix + ".", 0) == 0) {
        prefix_used[i] = true;
        return true;
      }
    }
    return false;
  };
  for (const auto& prefix : skip)
    if (prefix.empty()) throw ConfigError("model.init_skip: an empty prefix would skip every key");
  std::vector<std::pair<std::string, at::Tensor>> targets;
  for (const auto& p : model.named_parameters()) targets.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers()) targets.emplace_back(b.key(), b.value());

  std::vector<std::string> missing, wrong_shape, unexpected;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;
  std::set<std::string> known;
  for (const auto& [name, target] : targets) {
    known.insert(name);
    if (skipped(name)) continue;
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (it->second.sizes() != target.sizes()) {
      wrong_shape.push_back(name + " (file " + shape(it->second) + ", model " + shape(target) + ")");
    } else {
      copies.emplace_back(target, it->second);
    }
  }
  for (const auto& [name, t] : given)
    if (!known.count(name) && !skipped(name)) unexpected.push_back(name);
  for (size_t i = 0; i < skip.size(); ++i)
    if (!prefix_used[i])
      throw ConfigError("model.init_skip: '" + skip[i] + "' matches no key of the model or of " + source +
                        " (a prefix such as head, fc or blocks.0.attn)");
  if (!missing.empty() || !wrong_shape.empty() || !unexpected.empty()) {
    std::string msg = source + ": the weights do not fit the model" +
                      (torchvision ? " (torchvision ViT names, renamed to biaslab's)" : std::string()) + ":";
    if (!missing.empty()) msg += "\n  missing (" + std::to_string(missing.size()) + "): " + listing(missing);
    if (!unexpected.empty())
      msg += "\n  unexpected (" + std::to_string(unexpected.size()) + "): " + listing(unexpected);
    if (!wrong_shape.empty())
      msg += "\n  wrong shape (" + std::to_string(wrong_shape.size()) + "): " + listing(wrong_shape);
    throw CheckpointError(msg);
  }
  torch::NoGradGuard no_grad;
  for (auto& [target, value] : copies) target.copy_(value);
  return copies.size();
}

StateDict model_state_dict(const torch::nn::Module& model, Names names) {
  StateDict sd;
  auto name = [&](const std::string& key) { return names == Names::torchvision ? vit_name_to_torchvision(key) : key; };
  for (const auto& p : model.named_parameters()) sd.emplace_back(name(p.key()), p.value());
  for (const auto& b : model.named_buffers()) sd.emplace_back(name(b.key()), b.value());
  return sd;
}

std::string torch_save_bytes(const StateDict& sd) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [key, t] : sd) dict.insert(key, t.detach().to(torch::kCPU).contiguous());
  // torch.save's zip layout (data.pkl + data/N storages), pickled without LibTorch's type
  // tags (torch.jit._pickle.restore_type_tag), which torch.load's weights_only unpickler
  // -- the default since PyTorch 2.6 -- refuses; torch::pickle_save would write them.
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* b, size_t n) { pickle.insert(pickle.end(), b, b + n); }, nullptr,
                              nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    out.append(static_cast<const char*>(data), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  const auto& tensors = pickler.tensorData();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto data = torch::jit::getWriteableTensorData(tensors[i]);
    writer.writeRecord("data/" + std::to_string(i), data.data(), data.sizeInBytes());
  }
  writer.writeEndOfFile();
  return out;
}

void write_state_dict(const StateDict& sd, const std::string& path) { atomic_write(path, torch_save_bytes(sd)); }

}  // namespace biaslab
