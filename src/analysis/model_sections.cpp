// The sections of `biaslab analyze` every model gets: first-layer filters and the
// effective receptive field.
#include <torch/torch.h>

#include "analysis/analysis_page.h"
#include "analysis/receptive_field.h"
#include "core/errors.h"
#include "models/summary.h"
#include "plot/tiles.h"

namespace biaslab::analysis_detail {
namespace {

// A filter (C, k, k) as an image: C = 1 or 3 as is, otherwise the mean over channels.
torch::Tensor filter_image(const torch::Tensor& f) {
  const auto c = f.size(0);
  return plot::to_image(c == 1 || c == 3 ? f : f.mean(0, true), /*signed_range=*/true);
}

// The mean over the images of the gradient map, batch by batch.
torch::Tensor mean_receptive_field(Classifier& model, const AnalysisImages& images) {
  const auto features = feature_map_fn(model);
  const int64_t n = images.n;
  torch::Tensor erf;
  for (int64_t begin = 0; begin < n; begin += kBatch) {
    const int64_t len = std::min(kBatch, n - begin);
    const auto part = effective_receptive_field(features, images.x.narrow(0, begin, len)) * double(len) / double(n);
    erf = erf.defined() ? erf + part : part;
  }
  return erf;
}

}  // namespace

std::pair<std::string, torch::Tensor> first_filters(Classifier& model) {
  for (const auto& p : model.named_parameters())
    if (p.value().dim() == 4) return {p.key(), p.value().detach()};
  throw Error("analyze: the model has no convolution weights");
}

void write_filters(AnalysisPage& page, Classifier& model) {
  const auto [name, weights] = first_filters(model);
  const int64_t count = std::min<int64_t>(weights.size(0), 64);
  plot::TileGrid grid{"first-layer filters: " + name + " (" + std::to_string(weights.size(0)) + " x " +
                          std::to_string(weights.size(1)) + " x " + std::to_string(weights.size(2)) + " x " +
                          std::to_string(weights.size(3)) + "; grey = 0)",
                      16, 32, {}, {}};
  for (int64_t i = 0; i < count; ++i) grid.tiles.push_back({filter_image(weights[i]), {}, ""});
  plot::draw(grid, page.add("filters.png"));
  page.md << "## First-layer filters\n\n`" << name << "`, the first " << count << " of " << weights.size(0)
          << ", each scaled symmetrically around 0 (grey).\n\n![filters](filters.png)\n\n";
}

// Of the last feature map's central unit.
void write_receptive_field(AnalysisPage& page, Classifier& model, const Config& cfg, const AnalysisImages& images) {
  const int64_t n = images.n, size = cfg.data.image_size;
  const torch::Tensor erf = mean_receptive_field(model, images);
  const ModelSummary summary = summarize(model, cfg.data.channels, size);
  const auto& last = summary.stages.at(summary.stages.size() - 2);  // the stage before the head
  const int64_t theory = last.receptive_field;
  const std::string theory_text =
      theory == StageSummary::kGlobal ? "global" : std::to_string(std::min(theory, size)) + " px" +
                                                       (theory > size ? " (" + std::to_string(theory) + " unclipped)" : "");
  const int64_t s50 = erf_side(erf, 0.5), s90 = erf_side(erf, 0.9);
  page.numbers["receptive_field"] = {{"stage", last.name},         {"theoretical_px", theory},
                                     {"erf_side_50_px", s50},       {"erf_side_90_px", s90},
                                     {"erf_support_px", support_side(erf)}};
  page.text("receptive_field.csv", "stage,theoretical_px,erf_side_50_px,erf_side_90_px,erf_support_px\n" + last.name +
                                       "," + (theory == StageSummary::kGlobal ? std::string("global") : std::to_string(theory)) +
                                       "," + std::to_string(s50) + "," + std::to_string(s90) + "," +
                                       std::to_string(support_side(erf)) + "\n");
  plot::TileGrid grid{"effective receptive field of the central unit of " + last.name, 2, 160, {}, {}};
  grid.tiles.push_back({{}, erf, "|d unit / d input|"});
  grid.tiles.push_back({{}, erf.sqrt(), "square root (tails)"});
  plot::draw(grid, page.add("receptive_field.png"));
  const auto [cy, cx] = erf_centre(erf);
  page.md << "## Effective receptive field\n\nGradient of the central unit of `" << last.name
          << "` (the sum of its channels) with respect to the input, |.| summed over input channels, averaged over " << n
          << " images (Luo et al. 2016). Squares centred on its centre of mass (pixel " << cy << ", " << cx
          << ") holding 50% / 90% of it: " << s50
          << " / " << s90 << " px of " << size << "; theoretical receptive field: " << theory_text << ".\n\n"
          << "![effective receptive field](receptive_field.png)\n\n";
}

}  // namespace biaslab::analysis_detail
