#include "analysis/analyze.h"

#include <torch/torch.h>

#include "analysis/analysis_page.h"
#include "config/loader.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/opencv_support.h"
#include "core/runtime.h"
#include "data/dataset.h"
#include "data/image_folder.h"
#include "data/transforms.h"
#include "engine/trained_run.h"

namespace biaslab {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace analysis_detail {

fs::path AnalysisPage::add(const std::string& name) {
  files.push_back(dir / name);
  return dir / name;
}

void AnalysisPage::text(const std::string& name, const std::string& content) { atomic_write(add(name), content); }

}  // namespace analysis_detail

namespace {
using namespace analysis_detail;

constexpr const char* kAnalysisKind = "a biaslab analysis folder";

// An analysis written before folders had manifests: analysis.json beside nothing but the
// pictures, tables and page analyze writes.
bool is_legacy_analysis(const fs::path& dir) {
  if (!fs::is_regular_file(dir / "analysis.json")) return false;
  for (const auto& f : files_under(dir)) {
    const std::string ext = fs::path(f).extension().string();
    if (f.find('/') != std::string::npos || (ext != ".png" && ext != ".csv" && ext != ".json" && ext != ".md"))
      return false;
  }
  return true;
}

void check_request(const AnalyzeRequest& req) {
  if (!kWithOpenCV) refuse_without_opencv("analyze (its pictures are PNG files)");
  if (req.checkpoint != "best" && req.checkpoint != "last")
    throw ConfigError("--checkpoint: '" + req.checkpoint + "' is not one of best, last");
  if (req.images < 2) throw ConfigError("--images: expected at least 2, got " + std::to_string(req.images));
  if (req.show < 1) throw ConfigError("--show: expected at least 1, got " + std::to_string(req.show));
  if (req.probe_images < 1)
    throw ConfigError("--probe-images: expected at least 1, got " + std::to_string(req.probe_images));
  if (req.max_shift < 0) throw ConfigError("--max-shift: expected 0 or more pixels, got " + std::to_string(req.max_shift));
}

// The first test images for the statistics; for the pictures the given files, or the
// first test images.
AnalysisImages load_images(const AnalyzeRequest& req, const Config& cfg) {
  const Dataset data = load_dataset(cfg.data);
  AnalysisImages images;
  images.n = std::min<int64_t>(req.images, data.test.size());
  if (images.n < 2) throw DataError("analyze: the test split has fewer than 2 images");
  const torch::Tensor raw = data.test.images.narrow(0, 0, images.n);  // uint8 (n, C, H, W)
  images.x = normalize(raw, data.mean, data.std);
  const int64_t size = cfg.data.image_size;
  if (req.image_files.empty()) {
    images.shown_raw = raw.narrow(0, 0, std::min<int64_t>(req.show, images.n));
  } else {
    FolderReadOptions decode;
    decode.channels = cfg.data.channels;
    decode.image_size = size;
    images.shown_raw = torch::empty({int64_t(req.image_files.size()), cfg.data.channels, size, size}, torch::kUInt8);
    for (size_t i = 0; i < req.image_files.size(); ++i)
      if (!decode_image(req.image_files[i], decode, images.shown_raw[int64_t(i)]))
        throw DataError(req.image_files[i] + ": OpenCV cannot decode this image (or no such file)");
  }
  images.shown_x = normalize(images.shown_raw, data.mean, data.std);
  const int64_t probes = std::min<int64_t>(req.probe_images, data.test.size());
  images.probe_raw = data.test.images.narrow(0, 0, probes);
  images.probe_labels = data.test.labels.narrow(0, 0, probes);
  images.mean = data.mean;
  images.std = data.std;
  for (int64_t i = 0; i < images.shown_raw.size(0); ++i)
    images.shown_names.push_back(req.image_files.empty() ? "test image " + std::to_string(i)
                                                         : fs::path(req.image_files[size_t(i)]).filename().string());
  return images;
}

void write_page_header(AnalysisPage& page, const AnalyzeRequest& req, const fs::path& checkpoint,
                       const TrainedModel& trained, int64_t n, const std::string& model_name) {
  page.md << "# Analysis of " << model_name << " (" << trained.cfg.model.family << ")\n\n"
          << "Run `" << req.run_dir.string() << "`, checkpoint `" << checkpoint.filename().string() << "` (epoch "
          << trained.epoch << ", step " << trained.step << "); statistics over the first " << n << " test images.\n"
          << "Written by `biaslab analyze " << req.run_dir.string() << "`.\n\n";
}

}  // namespace

AnalyzeReport analyze_run(const AnalyzeRequest& req) {
  check_request(req);
  const fs::path checkpoint = resolve_checkpoint(req.run_dir, req.checkpoint);
  if (!fs::is_directory(req.run_dir) && req.out.empty())
    throw ConfigError("--out: required when analysing a checkpoint file rather than a run directory");
  TrainedModel trained = load_trained_model(checkpoint, false, req.overrides);
  const Config& cfg = trained.cfg;
  set_threads(int(cfg.runtime.threads));
  Classifier& model = *trained.model;
  model.eval();
  const AnalysisImages images = load_images(req, cfg);

  // The query, checked before anything is written: -1 for the class token.
  auto* vit = dynamic_cast<ViTImpl*>(&model);
  const int64_t query = vit ? parse_query(req.query, vit->patch_embed->grid_size()) : -1;
  if (!vit && (req.query != "cls" || !req.image_files.empty()))
    spdlog::warn("analyze: --query and --image concern attention; {} has none", cfg.model.family);
  const fs::path out = req.out.empty() ? req.run_dir / "analysis" : req.out;
  // A new folder or an earlier analysis nobody added to (replaced whole); anything else is refused.
  require_replaceable_folder(out, "--out", kAnalysisKind, is_legacy_analysis);
  AnalysisPage page;
  page.numbers = {{"run", req.run_dir.string()}, {"checkpoint", checkpoint.string()}, {"family", cfg.model.family},
                  {"preset", cfg.model.preset},  {"images", images.n},                 {"image_size", cfg.data.image_size}};
  // All or nothing, and an earlier analysis is replaced whole (no stale pictures).
  write_folder_atomically(out, [&](const fs::path& partial) {
    page.dir = partial;
    const std::string model_name = cfg.model.preset.empty() ? cfg.model.family : cfg.model.preset;
    write_page_header(page, req, checkpoint, trained, images.n, model_name);
    write_filters(page, model);
    write_receptive_field(page, model, cfg, images);
    if (vit)
      write_attention(page, *vit, cfg, images, query, model_name);
    else
      page.md << "## Attention\n\nNone: a convolutional network applies the same kernel at every position and for "
                 "every image (kernel variance across images 0 by construction).\n";
    write_probes(page, model, vit, cfg, images, std::min<int64_t>(req.max_shift, cfg.data.image_size - 1));
    page.text("analysis.json", page.numbers.dump(2) + "\n");
    page.text("README.md", page.md.str());
  }, "--out", kAnalysisKind, is_legacy_analysis);
  std::vector<fs::path> files;
  for (const auto& f : page.files) files.push_back(out / f.filename());
  return {out, files, page.numbers};
}

}  // namespace biaslab
