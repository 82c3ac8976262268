#include "export/predict.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/input_file.h"
#include "core/torch_compat.h"
#include "data/image_folder.h"
#include "data/transforms.h"
#include "export/archive.h"

namespace biaslab {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int64_t kMaxBatchBytes = int64_t(1) << 30;  // float pixels of one forward pass

bool is_image(const fs::path& p) {
  static const std::set<std::string> kExtensions = {".png", ".jpg", ".jpeg", ".bmp", ".pgm", ".ppm",
                                                    ".pbm", ".tif", ".tiff", ".webp"};
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return kExtensions.count(ext) > 0;
}

// Class index per folder name: the class name, or data export's "NN_name" form.
std::map<std::string, int64_t> folder_labels(const std::vector<std::string>& names) {
  std::map<std::string, int64_t> out;
  const auto n = int64_t(names.size());
  for (int64_t i = 0; i < n; ++i) {
    out[names[size_t(i)]] = i;
    out[class_folder_name(i, n, names[size_t(i)])] = i;
  }
  return out;
}

}  // namespace

std::vector<std::string> collect_images(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& input : inputs) {
    if (fs::is_directory(input)) {
      std::vector<std::string> found;
      for (const auto& e : fs::recursive_directory_iterator(input))
        if (e.is_regular_file() && is_image(e.path())) {
          // File names end up in --json output: refused up front rather than after inference.
          if (const std::string problem = text_problem(e.path().string(), true); !problem.empty())
            throw DataError(e.path().string() + ": the file name holds " + problem + "; rename it");
          found.push_back(e.path().string());
        }
      if (found.empty()) throw DataError(input + ": no image files in this folder");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(input)) {
      require_regular_file<DataError>(input, "an image");
      files.push_back(input);
    } else {
      throw DataError(input + ": no such file or folder");
    }
  }
  return files;
}

PredictResult predict(const PredictRequest& req) {
  if (req.topk < 1) throw ConfigError("--topk: expected a positive number, got " + std::to_string(req.topk));
  if (req.batch_size < 1)
    throw ConfigError("--batch-size: expected a positive number, got " + std::to_string(req.batch_size));
  if (!fs::exists(req.model)) throw CheckpointError(req.model + ": no such file");
  require_regular_file<CheckpointError>(req.model, "a TorchScript archive");
  PredictResult result;
  torch::jit::ExtraFilesMap extra = {{kArchiveMeta, ""}};
  torch::jit::Module module;
  try {
    module = torch::jit::load(req.model, torch::kCPU, extra);
  } catch (const std::exception& e) {  // c10::Error, or the TorchScript compiler's ErrorReport
    throw CheckpointError(req.model + ": not a TorchScript archive this LibTorch (" + compat::torch_version() +
                          ") can load: " + compat::error_message(e) +
                          " (an archive exported with LibTorch 2.x needs 2.x to run)");
  }
  int64_t size = 0, channels = 0;
  std::vector<double> mean, std;
  try {
    result.meta = json::parse(extra.at(kArchiveMeta));
    result.class_names = result.meta.at("class_names").get<std::vector<std::string>>();
    size = result.meta.at("image_size").get<int64_t>();
    channels = result.meta.at("in_chans").get<int64_t>();
    mean = result.meta.at("mean").get<std::vector<double>>();
    std = result.meta.at("std").get<std::vector<double>>();
  } catch (const json::exception& e) {
    throw CheckpointError(req.model + ": no readable " + std::string(kArchiveMeta) +
                          " (written by `biaslab export`): " + e.what());
  }
  if (result.class_names.empty() || size < 1 || (channels != 1 && channels != 3) ||
      mean.size() != size_t(channels) || std.size() != size_t(channels))
    throw CheckpointError(req.model + ": " + kArchiveMeta +
                          " is inconsistent (class names, image size, 1 or 3 channels, one mean and std each)");
  // One image's float pixels must fit in kMaxBatchBytes (image_size ~9,400 for RGB): a
  // larger image_size is a damaged or hostile archive, refused before any allocation.
  if (double(size) * double(size) * double(channels) * 4 > double(kMaxBatchBytes))
    throw CheckpointError(req.model + ": " + kArchiveMeta + " says image_size " + std::to_string(size) + ": one " +
                          std::to_string(channels) + "-channel image of that size would take more than the " +
                          format_bytes(kMaxBatchBytes) + " predict allows per forward pass");
  for (const auto& name : result.class_names)
    if (!text_problem(name).empty())
      throw CheckpointError(req.model + ": " + kArchiveMeta + ": a class name holds " + text_problem(name));
  module.eval();
  const int64_t k = std::min<int64_t>(req.topk, int64_t(result.class_names.size()));
  const auto labels = folder_labels(result.class_names);

  const std::vector<std::string> files = collect_images(req.inputs);
  FolderReadOptions decode;
  decode.channels = channels;
  decode.image_size = size;
  // At most kMaxBatchBytes of float pixels per forward pass, whatever --batch-size says.
  const int64_t batch = std::clamp<int64_t>(kMaxBatchBytes / (4 * channels * size * size), 1, req.batch_size);
  torch::NoGradGuard no_grad;
  for (size_t begin = 0; begin < files.size(); begin += size_t(batch)) {
    const size_t end = std::min(files.size(), begin + size_t(batch));
    auto images = torch::empty({int64_t(end - begin), channels, size, size}, torch::kUInt8);
    for (size_t i = begin; i < end; ++i) {
      if (!decode_image(files[i], decode, images[int64_t(i - begin)]))
        throw DataError(files[i] + ": OpenCV cannot decode this image");
    }
    const auto logits = module.forward({normalize(images, mean, std)}).toTensor();
    if (logits.dim() != 2 || logits.size(1) != int64_t(result.class_names.size()))
      throw CheckpointError(req.model + ": the model gives " + std::to_string(logits.size(-1)) + " outputs per image, " +
                            kArchiveMeta + " names " + std::to_string(result.class_names.size()) + " classes");
    const auto probs = torch::softmax(logits, 1);
    const auto [values, indices] = probs.topk(k, 1);
    for (size_t i = begin; i < end; ++i) {
      Prediction p;
      p.file = files[i];
      for (int64_t j = 0; j < k; ++j)
        p.top.emplace_back(indices[int64_t(i - begin)][j].item<int64_t>(), values[int64_t(i - begin)][j].item<double>());
      const auto it = labels.find(fs::path(files[i]).parent_path().filename().string());
      if (it != labels.end()) {
        p.label = it->second;
        ++result.labelled;
        if (p.top.front().first == p.label) ++result.correct;
      }
      result.items.push_back(std::move(p));
    }
  }
  return result;
}

}  // namespace biaslab
