// The attention section of `biaslab analyze` (transformers): mean attention distance and
// kernel variance per block as tables and a chart, and the query's attention maps, its
// rollout and its dynamic kernels as pictures.
#include <torch/torch.h>

#include <iomanip>

#include "analysis/analysis_page.h"
#include "analysis/attention_stats.h"
#include "core/errors.h"
#include "layers/transformer_block.h"
#include "plot/chart.h"
#include "plot/tiles.h"

namespace biaslab::analysis_detail {
using json = nlohmann::json;
namespace {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(digits);
  s << v;
  return s.str();
}

}  // namespace

double token_stride_px(const ModelConfig& m) {
  int64_t halvings = 0;
  if (m.family == "hybrid")
    halvings = m.tokenizer == "conv" ? int64_t(m.widths.size())
                                     : int64_t(m.layers.size()) - 1 + (m.stem == "imagenet" ? 2 : 0);
  return double(m.patch_size) * double(int64_t(1) << halvings);
}

namespace {

// Per block, over the statistics' images: mean distances weighted by images, kernel
// moments summed, and the number of prefix tokens (class token) before the patches.
struct BlockStatistics {
  std::vector<torch::Tensor> dist_sum, entropy_sum, score_var_sum;  ///< per block (H), times images
  std::vector<KernelMoments> moments;
  std::vector<int64_t> prefixes;
};

BlockStatistics block_statistics(ViTImpl& vit, const AnalysisImages& images, int64_t g, double patch_px) {
  const int64_t n = images.n, p = g * g;
  const size_t blocks = vit.blocks->size();
  BlockStatistics s{std::vector<torch::Tensor>(blocks), std::vector<torch::Tensor>(blocks), std::vector<torch::Tensor>(blocks),
                    std::vector<KernelMoments>(blocks), std::vector<int64_t>(blocks)};
  const auto accumulate = [](torch::Tensor& sum, const torch::Tensor& x) { sum = sum.defined() ? sum + x : x; };
  for (int64_t begin = 0; begin < n; begin += kBatch) {
    const int64_t len = std::min(kBatch, n - begin);
    const auto attn = collect_attention(vit, images.x.narrow(0, begin, len));
    for (size_t b = 0; b < blocks; ++b) {
      s.prefixes[b] = attn[b].size(2) - p;
      const auto d = mean_attention_distance(attn[b], g, s.prefixes[b], patch_px) * double(len);
      s.dist_sum[b] = s.dist_sum[b].defined() ? s.dist_sum[b] + d : d;
      accumulate(s.entropy_sum[b], attention_entropy(attn[b]) * double(len));
      accumulate(s.score_var_sum[b], score_variance(attn[b]) * double(len));
      s.moments[b].add(attn[b], g, s.prefixes[b]);
    }
  }
  return s;
}

// The mean attention distance of attention spread evenly over every key block `b` may
// attend (the whole grid, or its window).
double uniform_distance(ViTImpl& vit, size_t b, int64_t prefix, int64_t g, double patch_px) {
  const int64_t p = g * g;
  const auto& mask = vit.blocks->at<TransformerBlockImpl>(b).attn->window_mask();
  auto allowed = mask.defined() ? mask.to(torch::kDouble) : torch::ones({prefix + p, prefix + p}, torch::kDouble);
  allowed = allowed.view({1, 1, prefix + p, prefix + p});
  return mean_attention_distance(allowed / allowed.sum(-1, true), g, prefix, patch_px).mean().item<double>();
}

// attention_distance.csv/.png, kernel_variance.csv and the page's table; the number of heads.
int64_t write_attention_tables(AnalysisPage& page, ViTImpl& vit, const BlockStatistics& stats, int64_t n, int64_t g,
                               double patch_px, const std::string& model_name) {
  const size_t blocks = stats.dist_sum.size();
  std::string csv = "block,head,mean_distance_px\n", var_csv = "block,kernel_variance\n",
              entropy_csv = "block,head,entropy_nats,score_variance\n";
  plot::LineChart chart;
  chart.title = "Mean attention distance (" + model_name + ")";
  chart.x_label = "block";
  chart.y_label = "mean distance (px)";
  const int64_t heads = stats.dist_sum.front().size(0);
  chart.lines.resize(size_t(heads));
  json per_block = json::array();
  page.md << "## Attention\n\n" << blocks << " blocks x " << heads << " heads on a " << g << " x " << g
          << " patch grid (" << fixed(patch_px, 1) << " px per patch).\n\n"
          << "| block | mean distance (px), mean of heads | min head | max head | uniform attention over the same keys "
             "| kernel variance across images | entropy (nats), mean of heads | score variance, mean of heads |\n"
          << "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (size_t b = 0; b < blocks; ++b) {
    const auto dist = stats.dist_sum[b] / double(n);
    const auto entropy = stats.entropy_sum[b] / double(n), score_var = stats.score_var_sum[b] / double(n);
    for (int64_t h = 0; h < heads; ++h)
      entropy_csv += std::to_string(b) + "," + std::to_string(h) + "," + fixed(entropy[h].item<double>(), 4) + "," +
                     fixed(score_var[h].item<double>(), 4) + "\n";
    const double var = stats.moments[b].variance();
    const double uniform = uniform_distance(vit, b, stats.prefixes[b], g, patch_px);
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
                         {"kernel_variance", var},
                         {"entropy_nats", std::vector<double>(entropy.data_ptr<double>(), entropy.data_ptr<double>() + heads)},
                         {"score_variance",
                          std::vector<double>(score_var.data_ptr<double>(), score_var.data_ptr<double>() + heads)}});
    page.md << "| " << b << " | " << fixed(dist.mean().item<double>(), 2) << " | " << fixed(dist.min().item<double>(), 2)
            << " | " << fixed(dist.max().item<double>(), 2) << " | " << fixed(uniform, 2) << " | " << v.str() << " | "
            << fixed(entropy.mean().item<double>(), 3) << " | " << fixed(score_var.mean().item<double>(), 3) << " |\n";
  }
  var_csv += "conv,0 (by construction)\n";
  page.numbers["attention"] = per_block;
  page.numbers["patch_px"] = patch_px;
  page.text("attention_distance.csv", csv);
  page.text("kernel_variance.csv", var_csv);
  page.text("attention_entropy.csv", entropy_csv);
  plot::draw(chart, page.add("attention_distance.png"));
  return heads;
}

// What the pictures show: the attention of the shown images, and the query in it.
struct Query {
  int64_t g = 0, p = 0, heads = 0;
  int64_t query = -1;        ///< as parse_query gives it: -1 for the class token
  int64_t patch_query = 0;   ///< the query patch (the central one for the class token)
  std::string text;          ///< the query in a title
  std::vector<torch::Tensor> attn;  ///< per block (show, heads, N, N)
  /// The index of the query's row in a block with `prefix` tokens before the patches.
  int64_t row(int64_t prefix) const { return query < 0 && prefix > 0 ? int64_t(0) : prefix + patch_query; }
};

// The query's attention per block (rows) and head (columns), one picture per shown image.
void draw_attention_maps(AnalysisPage& page, const Query& q, const AnalysisImages& images) {
  for (int64_t i = 0; i < images.shown_raw.size(0); ++i) {
    plot::TileGrid maps{"attention of " + q.text + " over " + images.shown_names[size_t(i)] +
                            "; each tile scaled to its own range",
                        q.heads, 72, {}, {}};
    for (size_t b = 0; b < q.attn.size(); ++b) {
      const int64_t prefix = q.attn[b].size(2) - q.p;
      const int64_t row = q.row(prefix);
      maps.row_labels.push_back("block " + std::to_string(b) + (row == 0 && prefix > 0 ? " cls" : ""));
      for (int64_t h = 0; h < q.heads; ++h)
        maps.tiles.push_back({images.shown_raw[i], q.attn[b][i][h][row].narrow(0, prefix, q.p).reshape({q.g, q.g}),
                              "head " + std::to_string(h)});
    }
    plot::draw(maps, page.add("attention_maps_" + std::to_string(i) + ".png"));
  }
}

void draw_rollout(AnalysisPage& page, const Query& q, const AnalysisImages& images) {
  const int64_t show = images.shown_raw.size(0);
  const auto rollout = attention_rollout(q.attn);  // (show, N, N)
  const int64_t prefix = rollout.size(1) - q.p;
  plot::TileGrid roll{"attention rollout of " + q.text, show, 96, {}, {}};
  for (int64_t i = 0; i < show; ++i) {
    const auto row = rollout[i][q.row(prefix)].narrow(0, prefix, q.p);
    roll.tiles.push_back({images.shown_raw[i], row.reshape({q.g, q.g}), images.shown_names[size_t(i)]});
  }
  plot::draw(roll, page.add("rollout.png"));
}

// The query patch's kernel per block and image, beside the fixed kernels of the first conv.
void draw_dynamic_kernels(AnalysisPage& page, const Query& q, const AnalysisImages& images, Classifier& model) {
  const int64_t show = images.shown_raw.size(0), g = q.g;
  const auto [conv_name, conv] = first_filters(model);
  plot::TileGrid kernels{"the kernel of patch (" + std::to_string(q.patch_query / g) + ", " +
                             std::to_string(q.patch_query % g) +
                             "): its attention on the patch grid, mean of heads, per image; last row: fixed kernels "
                             "of " + conv_name + "; each tile scaled to its own range",
                         show, 64, {}, {}};
  for (size_t b = 0; b < q.attn.size(); ++b) {
    const int64_t pre = q.attn[b].size(2) - q.p;
    const auto k = query_kernel(q.attn[b], g, pre, q.patch_query).mean(1);  // (show, g, g)
    kernels.row_labels.push_back("block " + std::to_string(b));
    for (int64_t i = 0; i < show; ++i) kernels.tiles.push_back({{}, k[i], images.shown_names[size_t(i)]});
  }
  kernels.row_labels.push_back("conv");
  for (int64_t i = 0; i < show && i < conv.size(0); ++i)
    kernels.tiles.push_back({{}, conv[i].mean(0), "filter " + std::to_string(i)});
  plot::draw(kernels, page.add("dynamic_kernels.png"));
}

}  // namespace

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

void write_attention(AnalysisPage& page, ViTImpl& vit, const Config& cfg, const AnalysisImages& images,
                     int64_t query, const std::string& model_name) {
  const int64_t g = vit.patch_embed->grid_size();
  const double patch_px = token_stride_px(cfg.model);
  const BlockStatistics stats = block_statistics(vit, images, g, patch_px);
  Query q;
  q.g = g;
  q.p = g * g;
  q.heads = write_attention_tables(page, vit, stats, images.n, g, patch_px, model_name);

  // The pictures: the query's attention per block and head for every shown image, its
  // rollout, and its kernel beside fixed convolution kernels.
  q.query = query;
  q.patch_query = query < 0 ? (g / 2) * g + g / 2 : query;
  q.attn = collect_attention(vit, images.shown_x);
  q.text = query < 0 ? "the class token (the central patch in blocks without one)"
                     : "patch (" + std::to_string(q.patch_query / g) + ", " + std::to_string(q.patch_query % g) + ")";
  draw_attention_maps(page, q, images);
  draw_rollout(page, q, images);
  draw_dynamic_kernels(page, q, images, vit);

  page.md << "\nMean attention distance (Dosovitskiy et al. 2021, Fig. 7): for each patch query, the attention-weighted "
             "mean distance to the patch keys in input pixels, averaged over queries and images; one line per head "
             "(`attention_distance.csv`). The uniform reference is the same statistic for attention spread evenly over "
             "the keys the block may attend (the whole grid, or the local window). Kernel variance: the variance across "
             "images of each patch query's weight on each patch key it can attend, averaged (0 for a convolution). "
             "Entropy: of each attention row, in nats, averaged over queries and images (0 for one-hot attention, "
             "log k for attention spread evenly over k keys). Score variance: the variance over the keys a query "
             "attends of the scores the softmax saw (log A_ij; model.attn_scale, model.attn_temperature and relative "
             "bias included), averaged; ~1 at initialisation with the sqrt(d) scaling. Per head: "
             "`attention_entropy.csv`.\n\n"
          << "![mean attention distance](attention_distance.png)\n\n"
          << "![attention maps](attention_maps_0.png)\n\n![rollout](rollout.png)\n\n"
          << "![dynamic kernels](dynamic_kernels.png)\n";
}

}  // namespace biaslab::analysis_detail
