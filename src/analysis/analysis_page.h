#pragma once
// What the sections of `biaslab analyze` (analysis/analyze.h) share: the folder being
// written with its README page and the numbers of analysis.json, and the images.
//   analyze.cpp            the request, the images, the folder and the page around
//                          the sections
//   model_sections.cpp     first-layer filters and the effective receptive field (every model)
//   attention_section.cpp  attention tables and pictures (transformers)
// Not part of the analysis API.
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "models/vit.h"

namespace biaslab::analysis_detail {

inline constexpr int64_t kBatch = 16;  ///< images per forward/backward pass of the statistics

/// The analysis folder as it is written: its files in order, README.md, analysis.json.
struct AnalysisPage {
  std::filesystem::path dir;               ///< the (temporary) folder written into
  std::vector<std::filesystem::path> files;
  std::ostringstream md;                   ///< README.md
  nlohmann::json numbers;                  ///< analysis.json
  /// The path of file `name` in the folder, recorded as written.
  std::filesystem::path add(const std::string& name);
  /// Writes the text file `name` (atomically) and records it.
  void text(const std::string& name, const std::string& content);
};

/// The images analysed.
struct AnalysisImages {
  int64_t n = 0;             ///< test images the statistics average over
  torch::Tensor x;           ///< those images normalised, (n, C, H, W)
  torch::Tensor shown_raw;   ///< the images the pictures show, uint8 (show, C, H, W)
  torch::Tensor shown_x;     ///< the same normalised
  std::vector<std::string> shown_names;  ///< "test image I" or the file name, one per shown image
  torch::Tensor probe_raw, probe_labels;  ///< the bias probes' test images (uint8) and labels
  std::vector<double> mean, std;          ///< the test set's normalisation
};

/// Input pixels per step of a transformer's token grid: the patch size times the strides
/// of a hybrid's CNN tokenizer.
double token_stride_px(const ModelConfig& m);

/// "## Bias probes" (every model): probes.csv and .png, numbers["probes"].
/// `vit`: the model as a transformer (its tiles are the token stride), or null.
void write_probes(AnalysisPage& page, Classifier& model, const ViTImpl* vit, const Config& cfg,
                  const AnalysisImages& images, int64_t max_shift);

/// The first convolution-shaped weight in registration order: the stem, the tokenizer's
/// first conv, or the patch projection.
std::pair<std::string, torch::Tensor> first_filters(Classifier& model);

/// --query as a patch index on a grid x grid grid; -1 for the class token.
int64_t parse_query(const std::string& q, int64_t grid);

/// "## First-layer filters": filters.png.
void write_filters(AnalysisPage& page, Classifier& model);

/// "## Effective receptive field": receptive_field.csv and .png, numbers["receptive_field"].
void write_receptive_field(AnalysisPage& page, Classifier& model, const Config& cfg, const AnalysisImages& images);

/// "## Attention" of a transformer: attention_distance.csv and .png, kernel_variance.csv,
/// attention_maps_<i>.png, rollout.png, dynamic_kernels.png, numbers["attention"] and
/// numbers["patch_px"]. `query` as parse_query gives it.
void write_attention(AnalysisPage& page, ViTImpl& vit, const Config& cfg, const AnalysisImages& images,
                     int64_t query, const std::string& model_name);

}  // namespace biaslab::analysis_detail
