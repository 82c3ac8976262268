#pragma once
// `biaslab analyze RUN_DIR`: what a trained model learned, as PNG files, CSV tables and a
// Markdown page under RUN_DIR/analysis/:
//   filters.png              the first layer's filters (conv1, the tokenizer's first conv,
//                            or the ViT's patch projection)
//   receptive_field.png/.csv the effective receptive field of the last feature map's
//                            central unit, its 50/90% squares, the theoretical field
//   and for transformers (ViT, hybrids):
//   attention_maps_<i>.png   per shown image: per block (rows) and head (columns), the
//                            attention of the query (the class token, or a patch) over it
//   rollout.png              attention rollout of the query, for every shown image
//   dynamic_kernels.png      a patch query's "kernel" (its attention reshaped to the
//                            patch grid) for several images per block, beside fixed conv
//                            kernels; kernel_variance.csv: its variance across images
//   attention_distance.csv/.png  mean attention distance per block and head
//   attention_entropy.csv    entropy and score variance per block and head
//   and for every model:
//   probes.csv/.png          bias probes (analysis/probes.h): accuracy and consistency
//                            under translation, a tile shuffle, rotation and scale
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace biaslab {

struct AnalyzeRequest {
  std::filesystem::path run_dir;       ///< run directory (or checkpoint file with `out`)
  std::string checkpoint = "best";     ///< best | last
  std::filesystem::path out;           ///< "" = RUN_DIR/analysis
  int64_t images = 32;                 ///< test images the statistics average over
  int64_t show = 4;                    ///< test images drawn (when no image_files are given)
  int64_t probe_images = 1000;         ///< test images the bias probes evaluate (analysis/probes.h)
  int64_t max_shift = 4;               ///< the translation probe's largest shift, in pixels
  std::vector<std::string> image_files;  ///< images to draw instead (decoded as `predict` does)
  /// The query of the pictures: "cls" (the class token; the central patch in blocks
  /// without one), "center", or "ROW,COL" (a patch of the grid, 0-based).
  std::string query = "cls";
  std::vector<std::string> overrides;  ///< --set on the stored config (e.g. data.root)
};

struct AnalyzeReport {
  std::filesystem::path dir;
  std::vector<std::filesystem::path> files;
  nlohmann::json numbers;  ///< what README.md reports, machine-readable (also analysis.json)
};

AnalyzeReport analyze_run(const AnalyzeRequest& req);

}  // namespace biaslab
