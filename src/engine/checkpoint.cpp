#include "engine/checkpoint.h"

#include <torch/torch.h>

#include <filesystem>

#include "core/build_info.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/torch_compat.h"

namespace biaslab {
namespace {

constexpr int64_t kFormatVersion = 1;

void write_meta(torch::serialize::OutputArchive& ar, const CheckpointMeta& m) {
  ar.write("meta/format_version", c10::IValue(kFormatVersion));
  ar.write("meta/epoch", c10::IValue(m.epoch));
  ar.write("meta/step", c10::IValue(m.step));
  ar.write("meta/best_metric", c10::IValue(m.best_metric));
  ar.write("meta/best_epoch", c10::IValue(m.best_epoch));
  ar.write("meta/config_yaml", c10::IValue(m.config_yaml));
  ar.write("meta/biaslab_version", c10::IValue(std::string(build::kVersion)));
  ar.write("meta/torch_version", c10::IValue(compat::torch_version()));
}

CheckpointMeta read_meta(torch::serialize::InputArchive& ar, const std::string& path) {
  auto get = [&](const std::string& key) {
    c10::IValue v;
    if (!ar.try_read("meta/" + key, v)) throw CheckpointError(path + ": not a biaslab checkpoint (no meta/" + key + ")");
    return v;
  };
  if (get("format_version").toInt() != kFormatVersion)
    throw CheckpointError(path + ": checkpoint format " + std::to_string(get("format_version").toInt()) +
                          " is not supported (expected " + std::to_string(kFormatVersion) + ")");
  CheckpointMeta m;
  m.epoch = get("epoch").toInt();
  m.step = get("step").toInt();
  m.best_metric = get("best_metric").toDouble();
  m.best_epoch = get("best_epoch").toInt();
  m.config_yaml = get("config_yaml").toStringRef();
  m.biaslab_version = get("biaslab_version").toStringRef();
  m.torch_version = get("torch_version").toStringRef();
  return m;
}

void open_archive(torch::serialize::InputArchive& ar, const std::string& path) {
  if (!std::filesystem::exists(path)) throw CheckpointError(path + ": checkpoint does not exist");
  try {
    ar.load_from(path);
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": cannot read checkpoint (corrupt or truncated?): " + e.what_without_backtrace());
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer* optimizer, const CheckpointMeta& meta) {
  torch::serialize::OutputArchive ar;
  for (const auto& p : model.named_parameters()) ar.write("model/" + p.key(), p.value().detach().cpu());
  for (const auto& b : model.named_buffers()) ar.write("model/" + b.key(), b.value().cpu(), /*is_buffer=*/true);
  if (optimizer) {
    torch::serialize::OutputArchive opt;
    optimizer->save(opt);
    ar.write("optimizer", opt);
  }
  write_meta(ar, meta);
  atomic_write_with(path, [&](const std::string& tmp) { ar.save_to(tmp); });
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  torch::serialize::InputArchive ar;
  open_archive(ar, path);
  return read_meta(ar, path);
}

CheckpointMeta load_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive ar;
  open_archive(ar, path);
  CheckpointMeta meta = read_meta(ar, path);
  torch::NoGradGuard no_grad;
  auto load_into = [&](const std::string& name, torch::Tensor& target, bool is_buffer) {
    torch::Tensor t;
    if (!ar.try_read("model/" + name, t, is_buffer))
      throw CheckpointError(path + ": missing tensor model/" + name + " (checkpoint of a different model?)");
    if (t.sizes() != target.sizes())
      throw CheckpointError(path + ": model/" + name + " has shape " + c10::str(t.sizes()) + ", the model expects " +
                            c10::str(target.sizes()));
    target.copy_(t);
  };
  for (auto& p : model.named_parameters()) load_into(p.key(), p.value(), false);
  for (auto& b : model.named_buffers()) load_into(b.key(), b.value(), true);
  if (optimizer) {
    torch::serialize::InputArchive opt;
    if (!ar.try_read("optimizer", opt)) throw CheckpointError(path + ": holds no optimizer state");
    try {
      optimizer->load(opt);
    } catch (const c10::Error& e) {
      throw CheckpointError(path + ": optimizer state does not match: " + e.what_without_backtrace());
    }
  }
  return meta;
}

}  // namespace biaslab
