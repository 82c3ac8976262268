#include "engine/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <zlib.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/build_info.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/fingerprint.h"
#include "core/fs.h"
#include "core/input_file.h"
#include "core/torch_compat.h"

namespace biaslab {
namespace {

constexpr char kMagic[16] = {'B', 'I', 'A', 'S', 'L', 'A', 'B', '-', 'C', 'K', 'P', 'T', 0, 0, 0, 0};
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kHeaderSize = 32;

template <typename T>
void put(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>((uint64_t(v) >> (8 * i)) & 0xff));
}
template <typename T>
T get(const std::string& in, size_t at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return static_cast<T>(v);
}

uint32_t crc32_of(const char* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

// Reads and verifies a checkpoint file; returns its payload (the torch archive).
std::string read_verified(const std::string& path) {
  if (!std::filesystem::exists(path)) throw CheckpointError(path + ": checkpoint does not exist");
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const Error& e) {
    throw CheckpointError(e.what());
  }
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw CheckpointError(path + ": not a biaslab checkpoint (bad magic)");
  const auto version = get<uint32_t>(bytes, 16);
  if (version != kFormatVersion)
    throw CheckpointError(path + ": checkpoint format " + std::to_string(version) + " is not supported (expected " +
                          std::to_string(kFormatVersion) + ")");
  const auto size = get<uint64_t>(bytes, 20);
  if (bytes.size() - kHeaderSize != size)
    throw CheckpointError(path + ": truncated or padded: header says " + std::to_string(size) + " payload bytes, file has " +
                          std::to_string(bytes.size() - kHeaderSize));
  const auto crc = get<uint32_t>(bytes, 28);
  if (crc32_of(bytes.data() + kHeaderSize, size) != crc)
    throw CheckpointError(path + ": checksum mismatch (the file is corrupt)");
  return bytes.substr(kHeaderSize);
}

}  // namespace

bool is_checkpoint_file(const std::string& path) {
  if (!input_file_problem(path).empty()) return false;
  char head[sizeof kMagic] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) && std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

namespace {

void open_archive(torch::serialize::InputArchive& ar, const std::string& payload, const std::string& path) {
  try {
    ar.load_from(payload.data(), payload.size());
  } catch (const c10::Error& e) {
    throw CheckpointError(path + ": unreadable archive: " + e.what_without_backtrace());
  }
}

CheckpointContents read_contents(torch::serialize::InputArchive& ar, const std::string& path) {
  auto text = [&](const std::string& key) {
    c10::IValue v;
    if (!ar.try_read("meta/" + key, v) || !v.isString())
      throw CheckpointError(path + ": not a biaslab checkpoint (no meta/" + key + ")");
    return v.toStringRef();
  };
  CheckpointContents c;
  c.config_yaml = text("config_yaml");
  c.state_json = text("state_json");
  c.biaslab_version = text("biaslab_version");
  c.torch_version = text("torch_version");
  return c;
}

void write_module(torch::serialize::OutputArchive& ar, const std::string& prefix, const torch::nn::Module& m) {
  for (const auto& p : m.named_parameters()) ar.write(prefix + p.key(), p.value().detach().cpu());
  for (const auto& b : m.named_buffers()) ar.write(prefix + b.key(), b.value().cpu(), /*is_buffer=*/true);
}

void read_module(torch::serialize::InputArchive& ar, const std::string& prefix, torch::nn::Module& m,
                 const std::string& path) {
  torch::NoGradGuard no_grad;
  auto load_into = [&](const std::string& name, torch::Tensor& target, bool is_buffer) {
    torch::Tensor t;
    if (!ar.try_read(prefix + name, t, is_buffer))
      throw CheckpointError(path + ": missing tensor " + prefix + name + " (checkpoint of a different model?)");
    if (t.sizes() != target.sizes())
      throw CheckpointError(path + ": " + prefix + name + " has shape " + c10::str(t.sizes()) + ", the model expects " +
                            c10::str(target.sizes()));
    target.copy_(t);
  };
  for (auto& p : m.named_parameters()) load_into(p.key(), p.value(), false);
  for (auto& b : m.named_buffers()) load_into(b.key(), b.value(), true);
}

}  // namespace

void save_checkpoint(const std::string& path, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                     const torch::nn::Module* ema, const CheckpointContents& contents) {
  torch::serialize::OutputArchive ar;
  write_module(ar, "model/", model);
  if (ema) write_module(ar, "ema/", *ema);
  if (optimizer) {
    torch::serialize::OutputArchive opt;
    optimizer->save(opt);
    ar.write("optimizer", opt);
  }
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    ar.write("rng/cpu", gen.get_state());
  }
  ar.write("meta/config_yaml", c10::IValue(contents.config_yaml));
  ar.write("meta/state_json", c10::IValue(contents.state_json));
  ar.write("meta/biaslab_version", c10::IValue(std::string(build::kVersion)));
  ar.write("meta/torch_version", c10::IValue(compat::torch_version()));

  std::ostringstream payload_stream;
  ar.save_to(payload_stream);
  const std::string payload = payload_stream.str();
  std::string header(kMagic, sizeof kMagic);
  put<uint32_t>(header, kFormatVersion);
  put<uint64_t>(header, payload.size());
  put<uint32_t>(header, crc32_of(payload.data(), payload.size()));

  atomic_write_with(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(header.data(), std::streamsize(header.size()));
    out.write(payload.data(), std::streamsize(payload.size()));
    out.close();
    if (!out) throw CheckpointError("cannot write " + tmp);
    static int64_t writes = 0;  // fault injection: die between write and rename
    fault::kill_if("kill_in_checkpoint", ++writes);
  });
}

std::string weights_fingerprint(const torch::nn::Module& module) {
  Fingerprint f;
  auto feed_all = [&](const torch::OrderedDict<std::string, torch::Tensor>& items) {
    for (const auto& item : items) {
      f.feed(item.key());
      const auto t = item.value().detach().cpu().contiguous();
      f.feed(t.data_ptr(), size_t(t.numel()) * t.element_size());
    }
  };
  feed_all(module.named_parameters());
  feed_all(module.named_buffers());
  return f.hex();
}

CheckpointContents read_checkpoint_meta(const std::string& path) {
  const std::string payload = read_verified(path);
  torch::serialize::InputArchive ar;
  open_archive(ar, payload, path);
  return read_contents(ar, path);
}

CheckpointContents load_checkpoint(const std::string& path, torch::nn::Module& model,
                                   torch::optim::Optimizer* optimizer, torch::nn::Module* ema, bool restore_rng) {
  const std::string payload = read_verified(path);
  torch::serialize::InputArchive ar;
  open_archive(ar, payload, path);
  CheckpointContents contents = read_contents(ar, path);
  read_module(ar, "model/", model, path);
  if (ema) read_module(ar, "ema/", *ema, path);
  if (optimizer) {
    torch::serialize::InputArchive opt;
    if (!ar.try_read("optimizer", opt)) throw CheckpointError(path + ": holds no optimizer state");
    try {
      optimizer->load(opt);
    } catch (const c10::Error& e) {
      throw CheckpointError(path + ": optimizer state does not match: " + e.what_without_backtrace());
    }
  }
  if (restore_rng) {
    torch::Tensor state;
    if (!ar.try_read("rng/cpu", state)) throw CheckpointError(path + ": holds no RNG state");
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  }
  return contents;
}

}  // namespace biaslab
