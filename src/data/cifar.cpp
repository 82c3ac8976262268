#include "data/cifar.h"

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/input_file.h"

namespace biaslab {
namespace {
constexpr int64_t kPixels = 3 * 32 * 32;
}

CifarLayout cifar_layout(const std::string& format, const std::string& label_kind) {
  if (format == "cifar10") return {1, 0};
  return {2, label_kind == "coarse" ? 0 : 1};
}

std::vector<std::string> cifar_default_files(const std::string& format, const std::string& split) {
  if (format == "cifar100") return {split + ".bin"};
  if (split == "test") return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
}

Split read_cifar(const std::vector<std::string>& paths, const CifarLayout& layout) {
  const int64_t record = layout.label_bytes + kPixels;
  std::vector<torch::Tensor> images, labels;
  for (const auto& path : paths) {
    std::error_code ec;
    require_regular_file<DataError>(path, "a CIFAR record file");
    const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
    if (ec) throw DataError(path + ": cannot read its size (" + ec.message() + ")");
    if (bytes == 0 || bytes % record != 0)
      throw DataError(path + ": " + std::to_string(bytes) + " bytes is not a whole number of " +
                      std::to_string(record) + "-byte CIFAR records (truncated, or not a " +
                      (layout.label_bytes == 1 ? "CIFAR-10" : "CIFAR-100") + " binary file)");
    auto raw = torch::empty({bytes / record, record}, torch::kUInt8);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(raw.data_ptr<uint8_t>()), bytes))
      throw DataError(path + ": read failed after " + std::to_string(in.gcount()) + " of " + std::to_string(bytes) +
                      " bytes");
    labels.push_back(raw.select(1, layout.label_index).to(torch::kLong));
    images.push_back(raw.narrow(1, layout.label_bytes, kPixels).reshape({-1, 3, 32, 32}));
  }
  if (paths.empty()) throw DataError("no CIFAR files given");
  return {torch::cat(images).contiguous(), torch::cat(labels)};
}

void write_cifar(const std::string& path, const Split& split, const CifarLayout& layout, const torch::Tensor& coarse) {
  const int64_t n = split.size();
  auto raw = torch::empty({n, layout.label_bytes + kPixels}, torch::kUInt8);
  raw.narrow(1, layout.label_bytes, kPixels).copy_(split.images.reshape({n, kPixels}));
  if (layout.label_bytes == 2) {
    raw.select(1, 0).copy_(coarse.defined() ? coarse : split.labels);
    raw.select(1, 1).copy_(split.labels);
  } else {
    raw.select(1, 0).copy_(split.labels);
  }
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(raw.data_ptr<uint8_t>()), raw.numel());
  out.close();
  if (!out) throw DataError(path + ": write failed");
}

}  // namespace biaslab
