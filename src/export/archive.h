#pragma once
// `biaslab export`: a run's trained model as a TorchScript archive a C++ or Python
// consumer loads without biaslab, or as a state dict for Python's load_state_dict.
//
// The archive holds the module (export/torchscript.h) and two extra files:
//   biaslab/meta.json    class names, image size, channels, mean/std, family, preset,
//                        checkpoint, epoch, step, recorded test accuracy, versions
//   biaslab/config.yaml  the resolved config of the run
//   biaslab/check.pt     {"input": 8 random images, "logits": the native model's logits}
//                        (torch.load reads it), to repeat the parity check anywhere
// The root module also carries class_names, image_size, in_chans, mean, std, family,
// preset and biaslab_version as attributes.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace at {
class Tensor;
}
namespace torch::jit {
struct Module;
}

namespace biaslab {

struct ExportRequest {
  std::filesystem::path target;       ///< run directory or checkpoint file (empty with `weights`)
  std::filesystem::path weights;      ///< `biaslab convert`: foreign weights instead of a run
  std::filesystem::path config;       ///< with `weights`: the config file of their model
  std::string checkpoint = "best";    ///< best | last | ema (the EMA weights of last.pt)
  std::filesystem::path out;          ///< "" = RUN_DIR/export/<checkpoint>.pt (.state_dict.pt)
  std::string format = "torchscript";  ///< torchscript | state_dict
  std::string names = "native";       ///< state_dict: native | torchvision
  std::vector<std::string> overrides;  ///< --set on the stored config (e.g. data.root)
};

struct ExportReport {
  std::filesystem::path file;
  std::string checkpoint;
  int64_t bytes = 0;
  int64_t tensors = 0;        ///< parameters and buffers written
  int64_t check_inputs = 0;   ///< images the archive was checked on (torchscript)
  double max_abs_diff = 0.0;  ///< largest |archive - native| over their logits
  nlohmann::json meta;        ///< biaslab/meta.json (torchscript)
};

/// Writes the export (of a run's checkpoint, or with `weights` of a weights file: `biaslab
/// convert`) atomically after checking it: a TorchScript archive is saved,
/// loaded back and must give the native model's logits (max |diff| <= 1e-5) on
/// `check_inputs` random images, or nothing is written and an Error says by how much.
ExportReport export_model(const ExportRequest& req);

/// Saves `module` to `path` with the extra files below (meta, config, and the check
/// images with the native logits). Not atomic: export_model writes through a temporary.
void save_archive(const torch::jit::Module& module, const std::string& path, const nlohmann::json& meta,
                  const std::string& config_yaml, const at::Tensor& check_input, const at::Tensor& check_logits);

/// The names of the extra files inside an archive.
inline constexpr const char* kArchiveMeta = "biaslab/meta.json";
inline constexpr const char* kArchiveConfig = "biaslab/config.yaml";
inline constexpr const char* kArchiveCheck = "biaslab/check.pt";

}  // namespace biaslab
