#include "analysis/analyze.h"

#include <torch/torch.h>

#include <fstream>
#include <iomanip>
#include <sstream>

#include "analysis/attention_stats.h"
#include "analysis/receptive_field.h"
#include "config/loader.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/runtime.h"
#include "data/dataset.h"
#include "data/image_folder.h"
#include "data/transforms.h"
#include "engine/experiment.h"
#include "models/summary.h"
#include "layers/transformer_block.h"
#include "models/vit.h"
#include "plot/chart.h"
#include "plot/tiles.h"

namespace biaslab {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

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

constexpr int64_t kBatch = 16;  // images per forward/backward pass of the statistics

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

// The first convolution-shaped weight in registration order: the stem, the tokenizer's
// first conv, or the patch projection.
std::pair<std::string, torch::Tensor> first_filters(Classifier& model) {
  for (const auto& p : model.named_parameters())
    if (p.value().dim() == 4) return {p.key(), p.value().detach()};
  throw Error("analyze: the model has no convolution weights");
}

// A filter (C, k, k) as an image: C = 1 or 3 as is, otherwise the mean over channels.
torch::Tensor filter_image(const torch::Tensor& f) {
  const auto c = f.size(0);
  return plot::to_image(c == 1 || c == 3 ? f : f.mean(0, true), /*signed_range=*/true);
}

// --query as a patch index on a grid x grid grid; -1 for the class token.
int64_t parse_query(const std::string& q, int64_t grid) {
  if (q == "cls") return -1;
  if (q == "center" || q == "centre") return (grid / 2) * grid + grid / 2;
  const auto comma = q.find(',');
  auto number = [](const std::string& t) -> int64_t {
    size_t used = 0;
    const int64_t v = std::stoll(t, &used);
    if (used != t.size()) throw std::invalid_argument(t);
    return v;
  };
  try {
    if (comma != std::string::npos) {
      const int64_t r = number(q.substr(0, comma)), c = number(q.substr(comma + 1));
      if (r >= 0 && r < grid && c >= 0 && c < grid) return r * grid + c;
    }
  } catch (const std::exception&) {
  }
  throw ConfigError("--query: expected cls, center or ROW,COL with 0 <= ROW, COL < " + std::to_string(grid) +
                    " (the patch grid), got '" + q + "'");
}

// Input pixels per step of a transformer's token grid: the patch size times the strides
// of a hybrid's CNN tokenizer.
double token_stride_px(const ModelConfig& m) {
  int64_t halvings = 0;
  if (m.family == "hybrid")
    halvings = m.tokenizer == "conv" ? int64_t(m.widths.size())
                                     : int64_t(m.layers.size()) - 1 + (m.stem == "imagenet" ? 2 : 0);
  return double(m.patch_size) * double(int64_t(1) << halvings);
}

struct Writer {
  fs::path dir;
  std::vector<fs::path> files;
  fs::path add(const std::string& name) {
    files.push_back(dir / name);
    return dir / name;
  }
  void text(const std::string& name, const std::string& content) { atomic_write(add(name), content); }
};

}  // namespace

AnalyzeReport analyze_run(const AnalyzeRequest& req) {
  if (req.checkpoint != "best" && req.checkpoint != "last")
    throw ConfigError("--checkpoint: '" + req.checkpoint + "' is not one of best, last");
  if (req.images < 2) throw ConfigError("--images: expected at least 2, got " + std::to_string(req.images));
  if (req.show < 1) throw ConfigError("--show: expected at least 1, got " + std::to_string(req.show));
  const fs::path checkpoint = resolve_checkpoint(req.run_dir, req.checkpoint);
  if (!fs::is_directory(req.run_dir) && req.out.empty())
    throw ConfigError("--out: required when analysing a checkpoint file rather than a run directory");
  TrainedModel trained = load_trained_model(checkpoint, false, req.overrides);
  const Config& cfg = trained.cfg;
  set_threads(int(cfg.runtime.threads));
  Classifier& model = *trained.model;
  model.eval();

  const Dataset data = load_dataset(cfg.data);
  const int64_t n = std::min<int64_t>(req.images, data.test.size());
  if (n < 2) throw DataError("analyze: the test split has fewer than 2 images");
  const torch::Tensor raw = data.test.images.narrow(0, 0, n);  // uint8 (n, C, H, W)
  const torch::Tensor x = normalize(raw, data.mean, data.std);
  const int64_t size = cfg.data.image_size;
  // The images the pictures show: the given files, or the first test images.
  torch::Tensor shown_raw;
  if (req.image_files.empty()) {
    shown_raw = raw.narrow(0, 0, std::min<int64_t>(req.show, n));
  } else {
    FolderReadOptions decode;
    decode.channels = cfg.data.channels;
    decode.image_size = size;
    shown_raw = torch::empty({int64_t(req.image_files.size()), cfg.data.channels, size, size}, torch::kUInt8);
    for (size_t i = 0; i < req.image_files.size(); ++i)
      if (!decode_image(req.image_files[i], decode, shown_raw[int64_t(i)]))
        throw DataError(req.image_files[i] + ": OpenCV cannot decode this image (or no such file)");
  }
  const int64_t show = shown_raw.size(0);
  const torch::Tensor shown_x = normalize(shown_raw, data.mean, data.std);
  auto shown_name = [&](int64_t i) {
    return req.image_files.empty() ? "test image " + std::to_string(i)
                                   : std::filesystem::path(req.image_files[size_t(i)]).filename().string();
  };

  // The query, checked before anything is written: -1 for the class token.
  auto* vit = dynamic_cast<ViTImpl*>(&model);
  const int64_t query = vit ? parse_query(req.query, vit->patch_embed->grid_size()) : -1;

  if (!vit && (req.query != "cls" || !req.image_files.empty()))
    spdlog::warn("analyze: --query and --image concern attention; {} has none", cfg.model.family);
  const fs::path out = req.out.empty() ? req.run_dir / "analysis" : req.out;
  // A new folder or an earlier analysis nobody added to (replaced whole); anything else is refused.
  require_replaceable_folder(out, "--out", kAnalysisKind, is_legacy_analysis);
  Writer w;
  json numbers = {{"run", req.run_dir.string()}, {"checkpoint", checkpoint.string()}, {"family", cfg.model.family},
                  {"preset", cfg.model.preset},  {"images", n},                        {"image_size", size}};
  // All or nothing, and an earlier analysis is replaced whole (no stale pictures).
  write_folder_atomically(out, [&](const fs::path& partial) {
  w.dir = partial;
  std::ostringstream md;
  const std::string model_name = cfg.model.preset.empty() ? cfg.model.family : cfg.model.preset;
  md << "# Analysis of " << model_name << " (" << cfg.model.family << ")\n\n"
     << "Run `" << req.run_dir.string() << "`, checkpoint `" << checkpoint.filename().string() << "` (epoch "
     << trained.epoch << ", step " << trained.step << "); statistics over the first " << n << " test images.\n"
     << "Written by `biaslab analyze " << req.run_dir.string() << "`.\n\n";

  // First-layer filters.
  {
    const auto [name, weights] = first_filters(model);
    const int64_t count = std::min<int64_t>(weights.size(0), 64);
    plot::TileGrid grid{"first-layer filters: " + name + " (" + std::to_string(weights.size(0)) + " x " +
                            std::to_string(weights.size(1)) + " x " + std::to_string(weights.size(2)) + " x " +
                            std::to_string(weights.size(3)) + "; grey = 0)",
                        16, 32, {}, {}};
    for (int64_t i = 0; i < count; ++i) grid.tiles.push_back({filter_image(weights[i]), {}, ""});
    plot::draw(grid, w.add("filters.png"));
    md << "## First-layer filters\n\n`" << name << "`, the first " << count << " of " << weights.size(0)
       << ", each scaled symmetrically around 0 (grey).\n\n![filters](filters.png)\n\n";
  }

  // Effective receptive field of the last feature map's central unit.
  {
    const auto features = feature_map_fn(model);
    torch::Tensor erf;
    for (int64_t begin = 0; begin < n; begin += kBatch) {  // a mean over images, batch by batch
      const int64_t len = std::min(kBatch, n - begin);
      const auto part = effective_receptive_field(features, x.narrow(0, begin, len)) * double(len) / double(n);
      erf = erf.defined() ? erf + part : part;
    }
    const ModelSummary summary = summarize(model, cfg.data.channels, size);
    const auto& last = summary.stages.at(summary.stages.size() - 2);  // the stage before the head
    const int64_t theory = last.receptive_field;
    const std::string theory_text =
        theory == StageSummary::kGlobal ? "global" : std::to_string(std::min(theory, size)) + " px" +
                                                         (theory > size ? " (" + std::to_string(theory) + " unclipped)" : "");
    const int64_t s50 = erf_side(erf, 0.5), s90 = erf_side(erf, 0.9);
    numbers["receptive_field"] = {{"stage", last.name},         {"theoretical_px", theory},
                                  {"erf_side_50_px", s50},       {"erf_side_90_px", s90},
                                  {"erf_support_px", support_side(erf)}};
    w.text("receptive_field.csv", "stage,theoretical_px,erf_side_50_px,erf_side_90_px,erf_support_px\n" + last.name +
                                      "," + (theory == StageSummary::kGlobal ? std::string("global") : std::to_string(theory)) +
                                      "," + std::to_string(s50) + "," + std::to_string(s90) + "," +
                                      std::to_string(support_side(erf)) + "\n");
    plot::TileGrid grid{"effective receptive field of the central unit of " + last.name, 2, 160, {}, {}};
    grid.tiles.push_back({{}, erf, "|d unit / d input|"});
    grid.tiles.push_back({{}, erf.sqrt(), "square root (tails)"});
    plot::draw(grid, w.add("receptive_field.png"));
    const auto [cy, cx] = erf_centre(erf);
    md << "## Effective receptive field\n\nGradient of the central unit of `" << last.name
       << "` (the sum of its channels) with respect to the input, |.| summed over input channels, averaged over " << n
       << " images (Luo et al. 2016). Squares centred on its centre of mass (pixel " << cy << ", " << cx
       << ") holding 50% / 90% of it: " << s50
       << " / " << s90 << " px of " << size << "; theoretical receptive field: " << theory_text << ".\n\n"
       << "![effective receptive field](receptive_field.png)\n\n";
  }

  if (!vit) {
    md << "## Attention\n\nNone: a convolutional network applies the same kernel at every position and for every "
          "image (kernel variance across images 0 by construction).\n";
  } else {
    const int64_t g = vit->patch_embed->grid_size(), p = g * g;
    const double patch_px = token_stride_px(cfg.model);
    const int64_t centre = (g / 2) * g + g / 2;
    const size_t blocks = vit->blocks->size();
    // Statistics batch by batch: mean distances weighted by images, kernel moments summed.
    std::vector<torch::Tensor> dist_sum(blocks);
    std::vector<KernelMoments> moments(blocks);
    std::vector<int64_t> prefixes(blocks);
    for (int64_t begin = 0; begin < n; begin += kBatch) {
      const int64_t len = std::min(kBatch, n - begin);
      const auto attn = collect_attention(*vit, x.narrow(0, begin, len));
      for (size_t b = 0; b < blocks; ++b) {
        prefixes[b] = attn[b].size(2) - p;
        const auto d = mean_attention_distance(attn[b], g, prefixes[b], patch_px) * double(len);
        dist_sum[b] = dist_sum[b].defined() ? dist_sum[b] + d : d;
        moments[b].add(attn[b], g, prefixes[b]);
      }
    }
    std::string csv = "block,head,mean_distance_px\n", var_csv = "block,kernel_variance\n";
    plot::LineChart chart;
    chart.title = "Mean attention distance (" + model_name + ")";
    chart.x_label = "block";
    chart.y_label = "mean distance (px)";
    const int64_t heads = dist_sum.front().size(0);
    chart.lines.resize(size_t(heads));
    json per_block = json::array();
    md << "## Attention\n\n" << blocks << " blocks x " << heads << " heads on a " << g << " x " << g
       << " patch grid (" << fixed(patch_px, 1) << " px per patch).\n\n"
       << "| block | mean distance (px), mean of heads | min head | max head | uniform attention over the same keys "
          "| kernel variance across images |\n"
       << "| --- | --- | --- | --- | --- | --- |\n";
    for (size_t b = 0; b < blocks; ++b) {
      const int64_t prefix = prefixes[b];
      const auto dist = dist_sum[b] / double(n);
      const double var = moments[b].variance();
      // The same keys attended uniformly: every key the block may attend (its window).
      const auto& mask = vit->blocks->at<TransformerBlockImpl>(b).attn->window_mask();
      auto allowed = mask.defined() ? mask.to(torch::kDouble) : torch::ones({prefix + p, prefix + p}, torch::kDouble);
      allowed = allowed.view({1, 1, prefix + p, prefix + p});
      const double uniform =
          mean_attention_distance(allowed / allowed.sum(-1, true), g, prefix, patch_px).mean().item<double>();
      for (int64_t h = 0; h < heads; ++h) {
        const double d = dist[h].item<double>();
        csv += std::to_string(b) + "," + std::to_string(h) + "," + fixed(d, 4) + "\n";
        chart.lines[size_t(h)].label = "head " + std::to_string(h);
        chart.lines[size_t(h)].x.push_back(double(b));
        chart.lines[size_t(h)].y.push_back(d);
      }
      std::ostringstream v;
      v << std::scientific << std::setprecision(4) << var;
      var_csv += std::to_string(b) + "," + v.str() + "\n";
      per_block.push_back({{"block", b}, {"mean_distance_px", dist.mean().item<double>()},
                           {"uniform_reference_px", uniform},
                           {"heads_px", std::vector<double>(dist.data_ptr<double>(), dist.data_ptr<double>() + heads)},
                           {"kernel_variance", var}});
      md << "| " << b << " | " << fixed(dist.mean().item<double>(), 2) << " | " << fixed(dist.min().item<double>(), 2)
         << " | " << fixed(dist.max().item<double>(), 2) << " | " << fixed(uniform, 2) << " | " << v.str() << " |\n";
    }
    var_csv += "conv,0 (by construction)\n";
    numbers["attention"] = per_block;
    numbers["patch_px"] = patch_px;
    w.text("attention_distance.csv", csv);
    w.text("kernel_variance.csv", var_csv);
    plot::draw(chart, w.add("attention_distance.png"));

    // The pictures: the query's attention per block and head for every shown image, its
    // rollout, and its kernel beside fixed convolution kernels.
    const int64_t patch_query = query < 0 ? centre : query;
    const auto shown_attn = collect_attention(*vit, shown_x);
    auto query_row = [&](int64_t prefix) {  // index of the query's row in a block
      return query < 0 && prefix > 0 ? int64_t(0) : prefix + patch_query;
    };
    const std::string query_text = query < 0 ? "the class token (the central patch in blocks without one)"
                                             : "patch (" + std::to_string(patch_query / g) + ", " +
                                                   std::to_string(patch_query % g) + ")";
    for (int64_t i = 0; i < show; ++i) {
      plot::TileGrid maps{"attention of " + query_text + " over " + shown_name(i) + "; each tile scaled to its own range",
                          heads, 72, {}, {}};
      for (size_t b = 0; b < shown_attn.size(); ++b) {
        const int64_t prefix = shown_attn[b].size(2) - p;
        const int64_t row = query_row(prefix);
        maps.row_labels.push_back("block " + std::to_string(b) + (row == 0 && prefix > 0 ? " cls" : ""));
        for (int64_t h = 0; h < heads; ++h)
          maps.tiles.push_back({shown_raw[i], shown_attn[b][i][h][row].narrow(0, prefix, p).reshape({g, g}),
                                "head " + std::to_string(h)});
      }
      plot::draw(maps, w.add("attention_maps_" + std::to_string(i) + ".png"));
    }

    const auto rollout = attention_rollout(shown_attn);  // (show, N, N)
    const int64_t prefix = rollout.size(1) - p;
    plot::TileGrid roll{"attention rollout of " + query_text, show, 96, {}, {}};
    for (int64_t i = 0; i < show; ++i) {
      const auto row = rollout[i][query_row(prefix)].narrow(0, prefix, p);
      roll.tiles.push_back({shown_raw[i], row.reshape({g, g}), shown_name(i)});
    }
    plot::draw(roll, w.add("rollout.png"));

    const auto [conv_name, conv] = first_filters(model);
    plot::TileGrid kernels{"the kernel of patch (" + std::to_string(patch_query / g) + ", " +
                               std::to_string(patch_query % g) +
                               "): its attention on the patch grid, mean of heads, per image; last row: fixed kernels "
                               "of " + conv_name + "; each tile scaled to its own range",
                           show, 64, {}, {}};
    for (size_t b = 0; b < shown_attn.size(); ++b) {
      const int64_t pre = shown_attn[b].size(2) - p;
      const auto k = query_kernel(shown_attn[b], g, pre, patch_query).mean(1);  // (show, g, g)
      kernels.row_labels.push_back("block " + std::to_string(b));
      for (int64_t i = 0; i < show; ++i) kernels.tiles.push_back({{}, k[i], shown_name(i)});
    }
    kernels.row_labels.push_back("conv");
    for (int64_t i = 0; i < show && i < conv.size(0); ++i)
      kernels.tiles.push_back({{}, conv[i].mean(0), "filter " + std::to_string(i)});
    plot::draw(kernels, w.add("dynamic_kernels.png"));

    md << "\nMean attention distance (Dosovitskiy et al. 2021, Fig. 7): for each patch query, the attention-weighted "
          "mean distance to the patch keys in input pixels, averaged over queries and images; one line per head "
          "(`attention_distance.csv`). The uniform reference is the same statistic for attention spread evenly over "
          "the keys the block may attend (the whole grid, or the local window). Kernel variance: the variance across "
          "images of each patch query's weight on each patch key it can attend, averaged (0 for a convolution).\n\n"
       << "![mean attention distance](attention_distance.png)\n\n"
       << "![attention maps](attention_maps_0.png)\n\n![rollout](rollout.png)\n\n"
       << "![dynamic kernels](dynamic_kernels.png)\n";
  }
  w.text("analysis.json", numbers.dump(2) + "\n");
  w.text("README.md", md.str());
  }, "--out", kAnalysisKind, is_legacy_analysis);
  std::vector<fs::path> files;
  for (const auto& f : w.files) files.push_back(out / f.filename());
  return {out, files, numbers};
}

}  // namespace biaslab
