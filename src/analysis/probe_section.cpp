// The bias-probe section of `biaslab analyze` (every model): probes.csv, probes.png and
// the page's table (analysis/probes.h).
#include <fmt/format.h>
#include <torch/torch.h>

#include "analysis/analysis_page.h"
#include "analysis/probes.h"
#include "plot/chart.h"

namespace biaslab::analysis_detail {

void write_probes(AnalysisPage& page, Classifier& model, const ViTImpl* vit, const Config& cfg,
                  const AnalysisImages& images, int64_t max_shift) {
  // The shuffle's tiles: a transformer's token stride (a patch ViT's tokens), else 4 px.
  const bool transformer = vit != nullptr;
  const auto block = transformer ? int64_t(token_stride_px(cfg.model)) : int64_t(4);
  const auto points = run_probes(model, images.probe_raw, images.probe_labels, images.mean, images.std, max_shift, block);
  std::string csv = "probe,amount,accuracy,consistency\n";
  nlohmann::json numbers = nlohmann::json::array();
  plot::LineChart chart;
  chart.title = "Translation probe";
  chart.x_label = "shift (px)";
  chart.y_label = "%";
  chart.y_floor = 0;
  chart.y_ceil = 100;
  chart.lines.resize(2);
  chart.lines[0].label = "accuracy";
  chart.lines[1].label = "consistency with the unshifted prediction";
  page.md << "\n## Bias probes\n\nOn the first " << images.probe_raw.size(0)
          << " test images: accuracy, and consistency (the share of predictions the transformation leaves unchanged). "
             "Translation: shifted right, left, down and up on the image's own canvas (the vacated border 0), "
             "averaged; shuffle: the image's "
          << block << " x " << block << " px tiles permuted (one fixed permutation"
          << (transformer ? "; for a patch ViT a permutation of its tokens" : "") << "); rotation by plus and minus the "
          << "angle, averaged; scale about the centre (`probes.csv`).\n\n| probe | amount | accuracy (%) | consistency (%) |\n"
             "| --- | --- | --- | --- |\n";
  for (const auto& p : points) {
    csv += fmt::format("{},{:g},{:.6f},{:.6f}\n", p.probe, p.amount, p.accuracy, p.consistency);
    numbers.push_back({{"probe", p.probe}, {"amount", p.amount}, {"accuracy", p.accuracy}, {"consistency", p.consistency}});
    const std::string unit = p.probe == "translation" || p.probe == "shuffle" ? " px" : p.probe == "rotation" ? " deg" : "x";
    page.md << "| " << p.probe << " | " << fmt::format("{:g}", p.amount) << unit << " | "
            << fmt::format("{:.2f}", 100 * p.accuracy) << " | " << fmt::format("{:.2f}", 100 * p.consistency) << " |\n";
    if (p.probe != "translation") continue;
    for (size_t l = 0; l < 2; ++l) chart.lines[l].x.push_back(p.amount);
    chart.lines[0].y.push_back(100 * p.accuracy);
    chart.lines[1].y.push_back(100 * p.consistency);
  }
  page.md << "\n![translation probe](probes.png)\n";
  page.numbers["probes"] = numbers;
  page.text("probes.csv", csv);
  plot::draw(chart, page.add("probes.png"));
}

}  // namespace biaslab::analysis_detail
