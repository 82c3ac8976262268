#include "export/archive.h"

#include <ATen/CPUGeneratorImpl.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "config/loader.h"
#include "core/build_info.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/input_file.h"
#include "core/output_folder.h"
#include "core/runtime.h"
#include "core/torch_compat.h"
#include "data/dataset.h"
#include "engine/trained_run.h"
#include "engine/run_dir.h"
#include "export/torchscript.h"
#include "export/weights.h"

namespace biaslab {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int64_t kCheckImages = 8;
constexpr double kTolerance = 1e-5;

// The normalisation the model was trained with: the config's, else the one summary.json
// recorded (computed from the training subset), else computed again from the data.
std::pair<std::vector<double>, std::vector<double>> normalisation(const Config& cfg, const json& summary) {
  if (!cfg.data.mean.empty()) return {cfg.data.mean, cfg.data.std};
  try {
    if (!summary.is_null() && summary.contains("data") && summary["data"].contains("mean"))
      return {summary["data"]["mean"].get<std::vector<double>>(), summary["data"]["std"].get<std::vector<double>>()};
  } catch (const json::exception& e) {
    throw CheckpointError(std::string("summary.json: data.mean / data.std unreadable: ") + e.what());
  }
  const Dataset data = load_dataset(cfg.data);
  return {data.mean, data.std};
}

// --names torchvision: torchvision's VisionTransformer is a plain pre-norm ViT (LayerNorm,
// residual connections, global attention with qkv bias, a learned positional embedding,
// class-token pooling); a ViT that differs in any of these would load there under the
// same names and compute something else, so it is refused. ResNets already use
// torchvision's names.
void check_torchvision_names(const ModelConfig& m, const StateDict& native) {
  if (m.family == "resnet") return;
  std::vector<std::string> differences;
  if (m.family == "hybrid") differences.push_back("a CNN tokenizer (family hybrid)");
  if (!m.norm.empty() && m.norm != "layernorm") differences.push_back("model.norm " + m.norm);
  if (m.norm_placement != "pre") differences.push_back("model.norm_placement " + m.norm_placement);
  if (!m.residual) differences.push_back("model.residual false");
  if (m.pool != "cls") differences.push_back("model.pool " + m.pool);
  if (m.pos_embed != "learned") differences.push_back("model.pos_embed " + m.pos_embed);
  if (m.attn_window != 0) differences.push_back("model.attn_window " + std::to_string(m.attn_window));
  if (m.gpsa_layers != 0) differences.push_back("model.gpsa_layers " + std::to_string(m.gpsa_layers));
  if (!m.qkv_bias) differences.push_back("model.qkv_bias false");
  if (m.attn_scale != "sqrt_dk" || m.attn_temperature != 1.0) differences.push_back("model.attn_scale / attn_temperature");
  if (m.layer_scale_init > 0 || m.rezero) differences.push_back("LayerScale / ReZero");
  for (const auto& [key, t] : native)
    if (differences.empty() && vit_name_to_torchvision(key) == key) differences.push_back("the tensor " + key);
  if (differences.empty()) return;
  std::string list;
  for (size_t i = 0; i < differences.size(); ++i) list += (i ? ", " : "") + differences[i];
  throw ConfigError("--names torchvision: torchvision's VisionTransformer is a plain pre-norm ViT with LayerNorm, "
                    "residual connections, global attention with qkv bias, a learned positional embedding and "
                    "class-token pooling; this model has " + list);
}

// True for a TorchScript archive biaslab exported (it carries biaslab/meta.json).
bool is_biaslab_archive(const fs::path& file) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(file.string());
    return reader.hasRecord(std::string("extra/") + kArchiveMeta);
  } catch (const std::exception&) {
    return false;
  }
}

// The export's target may be new, one of biaslab's archives, or a file of biaslab's name
// in a run directory's export/ folder; a user's file is never overwritten.
void check_export_target(const fs::path& file) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  // RUN/export/{best,last,ema}[.state_dict].pt of a biaslab run directory is export's own.
  const bool in_run = dir.filename() == "export" && run_dir::is_run_dir(dir.parent_path()) &&
                      run_dir::is_export_name(file.filename().string());
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(file, ec));
  if (exists && !(fs::is_regular_file(file) && (in_run || is_biaslab_archive(file))))
    throw CheckpointError("--out: " + file.string() + " exists and is not a biaslab export (" +
                          (fs::is_regular_file(file) ? std::string("no ") + kArchiveMeta + " inside"
                                                     : input_file_problem(file)) +
                          "); biaslab never overwrites a file it did not write: choose another --out or remove it");
  // Leftovers of killed exports: all of a run's export/ folder, elsewhere only this file's.
  if (fs::is_directory(dir)) remove_stale_temporaries(dir, in_run ? "" : file.filename().string());
}

}  // namespace

void save_archive(const torch::jit::Module& module, const std::string& path, const json& meta,
                  const std::string& config_yaml, const at::Tensor& check_input, const at::Tensor& check_logits) {
  // The check images and the native logits travel with the archive, so that a consumer
  // can repeat the parity check on its own platform.
  const torch::jit::ExtraFilesMap extra = {
      {kArchiveMeta, meta.dump(2) + "\n"},
      {kArchiveConfig, config_yaml},
      {kArchiveCheck, torch_save_bytes({{"input", check_input}, {"logits", check_logits}})}};
  module.save(path, extra);
}

ExportReport export_model(const ExportRequest& req) {
  if (req.checkpoint != "best" && req.checkpoint != "last" && req.checkpoint != "ema")
    throw ConfigError("--checkpoint: '" + req.checkpoint + "' is not one of best, last, ema");
  if (req.format != "torchscript" && req.format != "state_dict")
    throw ConfigError("--format: '" + req.format + "' is not one of torchscript, state_dict");
  if (req.names != "native" && req.names != "torchvision")
    throw ConfigError("--names: '" + req.names + "' is not one of native, torchvision");
  if (req.names == "torchvision" && req.format != "state_dict")
    throw ConfigError("--names torchvision applies to --format state_dict only");
  const bool ema = req.checkpoint == "ema";
  const bool foreign = !req.weights.empty();
  if (foreign && req.out.empty()) throw ConfigError("--out: required when converting a weights file");
  const fs::path checkpoint = foreign ? req.weights : resolve_checkpoint(req.target, ema ? "last" : req.checkpoint);
  if (!foreign && !fs::is_directory(req.target) && req.out.empty())
    throw ConfigError("--out: required when exporting a checkpoint file rather than a run directory");
  TrainedModel trained = foreign ? load_weights_model(req.weights, req.config, req.overrides)
                                 : load_trained_model(checkpoint, ema, req.overrides);
  ClassifierPtr model = trained.model;
  model->eval();
  const Config& cfg = trained.cfg;
  set_threads(int(cfg.runtime.threads));

  ExportReport report;
  report.checkpoint = checkpoint.string();
  const std::string stem = req.checkpoint + (req.format == "state_dict" ? ".state_dict.pt" : ".pt");
  report.file = req.out.empty() ? req.target / "export" / stem : req.out;
  check_export_target(report.file);

  if (req.format == "state_dict") {
    if (req.names == "torchvision") check_torchvision_names(cfg.model, model_state_dict(*model, Names::native));
    const StateDict sd = model_state_dict(*model, req.names == "torchvision" ? Names::torchvision : Names::native);
    write_state_dict(sd, report.file.string());
    report.tensors = int64_t(sd.size());
    report.bytes = int64_t(fs::file_size(report.file));
    return report;
  }

  const json summary = foreign ? json() : read_run_summary(checkpoint);
  ScriptMetadata meta;
  meta.class_names = cfg.data.class_names.empty() ? index_class_names(cfg.data.num_classes) : cfg.data.class_names;
  meta.image_size = cfg.data.image_size;
  meta.in_chans = cfg.data.channels;
  std::tie(meta.mean, meta.std) = normalisation(cfg, summary);
  meta.family = cfg.model.family;
  meta.preset = cfg.model.preset;
  meta.biaslab_version = build::kVersion;
  torch::jit::Module module = to_torchscript(*model, meta);

  report.meta = {{"format", "biaslab-torchscript-1"},
                 {"class_names", meta.class_names},
                 {"num_classes", cfg.data.num_classes},
                 {"image_size", meta.image_size},
                 {"in_chans", meta.in_chans},
                 {"mean", meta.mean},
                 {"std", meta.std},
                 {"input", "float32 (B, in_chans, image_size, image_size): pixels / 255, minus mean, over std"},
                 {"family", meta.family},
                 {"preset", meta.preset},
                 {"name", cfg.name},
                 {"checkpoint", req.checkpoint},
                 {"epoch", trained.epoch},
                 {"step", trained.step},
                 {"trained_with", {{"biaslab", trained.biaslab_version},
                                   {"precision", summary.is_object() ? summary.value("precision", cfg.train.precision)
                                                                     : cfg.train.precision}}},
                 {"exported_with", {{"biaslab", build::kVersion}, {"git", build::kGitCommit}, {"git_dirty", build::kGitDirty},
                                    {"libtorch", compat::torch_version()}}}};
  if (foreign) {
    report.meta["converted_from"] = fs::absolute(req.weights).string();
    report.meta["trained_with"] = nullptr;  // not by biaslab: the weights came as a file
  } else if (const json recorded = recorded_test_metrics(checkpoint, trained.epoch, ema); !recorded.is_null()) {
    report.meta["recorded_test_acc"] = recorded["acc"];
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  const auto x = torch::randn({kCheckImages, meta.in_chans, meta.image_size, meta.image_size}, gen);
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    expected = model->forward(x);
  }
  atomic_write_with(report.file, [&](const std::string& tmp) {
    save_archive(module, tmp, report.meta, to_yaml(cfg), x, expected);
    torch::jit::Module loaded = torch::jit::load(tmp, torch::kCPU);
    const auto got = loaded.forward({x}).toTensor();
    report.max_abs_diff = (got - expected).abs().max().item<double>();
    if (!(report.max_abs_diff <= kTolerance))
      throw Error("export: the TorchScript module's logits differ from the native model's by " +
                  std::to_string(report.max_abs_diff) + " (> " + std::to_string(kTolerance) + ") on " +
                  std::to_string(kCheckImages) + " check images; nothing written");
  });
  report.check_inputs = kCheckImages;
  report.tensors = int64_t(module.named_parameters().size() + module.named_buffers().size());
  report.bytes = int64_t(fs::file_size(report.file));
  return report;
}

}  // namespace biaslab
