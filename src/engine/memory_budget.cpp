#include "engine/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace biaslab {
namespace {

constexpr double kFloat = 4.0;

struct Trunk {
  double params = 0;
  double activations = 0;  // floats per image kept for backward
  double peak = 0;         // floats per image of the largest single activation (what inference holds)
  double side = 0;         // output feature map side
  double channels = 0;
};

// A ResNet trunk: stem plus stages of basic (two 3x3 convs) or bottleneck blocks.
Trunk resnet_trunk(const ModelConfig& m, double channels, double side) {
  Trunk t;
  const bool imagenet = m.stem == "imagenet";
  const double w0 = m.widths.empty() ? 16 : double(m.widths[0]);
  t.params += channels * w0 * (imagenet ? 49 : 9);
  if (imagenet) side = std::ceil(side / 4);
  t.activations += 4 * w0 * side * side;
  t.peak = w0 * side * side * (imagenet ? 16 : 1);
  double in = w0;
  for (size_t s = 0; s < m.layers.size() && s < m.widths.size(); ++s) {
    const double w = double(m.widths[s]);
    if (s > 0) side = std::ceil(side / 2);
    const double out = m.block == "bottleneck" ? 4 * w : w;
    const double per_block = m.block == "bottleneck" ? (out * w + 9 * w * w + w * out) : (18 * w * w);
    t.params += double(m.layers[s]) * per_block + in * out;  // + projection shortcut
    // Each conv keeps its input, the norm's and the activation's outputs: three tensors of
    // its output size (basic: two convs of `out`; bottleneck: w, w and 4w channels).
    t.activations += double(m.layers[s]) * 3 * (m.block == "bottleneck" ? 2 * w + out : 2 * out) * side * side;
    t.peak = std::max(t.peak, out * side * side);
    in = out;
  }
  t.side = side;
  t.channels = in;
  return t;
}

// The CCT tokenizer: one conv-ReLU-maxpool layer per width.
Trunk conv_trunk(const ModelConfig& m, double channels, double side) {
  Trunk t;
  double in = channels;
  for (const int64_t w : m.widths) {
    const double k = double(m.tokenizer_kernel);
    t.params += in * double(w) * k * k;
    t.activations += 3 * double(w) * side * side;
    t.peak = std::max(t.peak, double(w) * side * side);
    side = std::ceil(side / 2);
    in = double(w);
  }
  t.side = side;
  t.channels = in;
  return t;
}

// The transformer: tokens of `side`/patch_size squared (+ a class token).
Trunk transformer(const ModelConfig& m, double channels, double side) {
  Trunk t;
  const double d = double(m.embed_dim), p = double(m.patch_size), depth = double(m.depth);
  const double n = std::pow(std::floor(side / std::max(p, 1.0)), 2) + 1;
  const double hidden = d * m.mlp_ratio;
  t.params = channels * p * p * d + n * d + depth * (4 * d * d + 2 * d * hidden + 9 * d);
  // Per block: norms, q/k/v, projection, MLP hidden (before and after GELU), residual
  // sums, and the heads' score and probability matrices.
  t.activations = depth * (n * (10 * d + 2 * hidden) + 2 * double(m.num_heads) * n * n);
  t.peak = std::max(n * hidden, double(m.num_heads) * n * n);
  t.side = 1;
  t.channels = d;
  return t;
}

}  // namespace

MemoryEstimate estimate_memory(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  const double channels = double(cfg.data.channels), side = double(cfg.data.image_size);
  const double classes = double(cfg.data.num_classes);
  Trunk body;
  if (m.family == "resnet") {
    body = resnet_trunk(m, channels, side);
    body.params += body.channels * classes;
  } else {
    Trunk cnn;
    if (m.family == "hybrid") cnn = m.tokenizer == "conv" ? conv_trunk(m, channels, side) : resnet_trunk(m, channels, side);
    const Trunk vit = m.family == "hybrid" ? transformer(m, cnn.channels, cnn.side) : transformer(m, channels, side);
    body.params = cnn.params + vit.params + double(m.embed_dim) * classes;
    body.activations = cnn.activations + vit.activations;
    body.peak = std::max(cnn.peak, vit.peak);
  }
  MemoryEstimate e;
  e.parameters = body.params;
  // Weights and gradients, two AdamW moments (one SGD momentum buffer), and the EMA copy.
  const double copies = 2 + (cfg.optim.name == "adamw" ? 2 : 1) + (cfg.train.ema_decay > 0 ? 1 : 0);
  e.weight_bytes = body.params * copies * kFloat;
  const double input = channels * side * side;
  // Training keeps every layer's activations for the backward pass; evaluation (no
  // autograd) holds a few layer outputs at a time: the input and ~3 of the largest.
  e.activation_bytes = std::max(double(cfg.train.batch_size) * (body.activations + input),
                                double(cfg.train.eval_batch_size) * (3 * body.peak + input)) *
                       kFloat;
  if (cfg.data.format == "synthetic")
    e.data_bytes = double(cfg.data.train_size + cfg.data.test_size) * channels * side * side;
  return e;
}

double memory_limit_bytes(const RuntimeConfig& runtime) {
  if (runtime.max_memory_gb > 0) return runtime.max_memory_gb * double(1 << 30);
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 64.0 * double(1 << 30);
}

void check_memory_budget(const Config& cfg, bool activations_in_host_memory) {
  MemoryEstimate e = estimate_memory(cfg);
  if (!activations_in_host_memory) e.activation_bytes = 0;
  const double limit = memory_limit_bytes(cfg.runtime);
  if (e.total() <= limit) return;
  const double gib = double(1 << 30);
  const ModelConfig& m = cfg.model;
  const std::string model_keys =
      m.family == "resnet" ? fmt::format("model.layers, model.widths") : "model.depth = " + std::to_string(m.depth) +
                                                                          ", model.embed_dim = " +
                                                                          std::to_string(m.embed_dim);
  std::string cause;
  if (e.weight_bytes >= e.activation_bytes && e.weight_bytes >= e.data_bytes)
    cause = fmt::format("the model ({}): about {:.3g} parameters, {:.3g} GiB with gradients and optimizer state",
                        model_keys, e.parameters, e.weight_bytes / gib);
  else if (e.activation_bytes >= e.data_bytes)
    cause = fmt::format("the activations of a batch (train.batch_size = {}, train.eval_batch_size = {}, {}, "
                        "data.image_size = {}): {:.3g} GiB",
                        cfg.train.batch_size, cfg.train.eval_batch_size, model_keys, cfg.data.image_size,
                        e.activation_bytes / gib);
  else
    cause = fmt::format("the synthetic images (data.train_size = {}, data.test_size = {}, data.image_size = {}): "
                        "{:.3g} GiB",
                        cfg.data.train_size, cfg.data.test_size, cfg.data.image_size, e.data_bytes / gib);
  throw ConfigError(fmt::format(
      "this run would need about {:.3g} GiB of memory, more than the {:.3g} GiB {}; most of it is {}. Reduce it, or "
      "set runtime.max_memory_gb if the estimate is wrong for your machine",
      e.total() / gib, limit / gib, cfg.runtime.max_memory_gb > 0 ? "runtime.max_memory_gb allows" : "this machine has",
      cause));
}

}  // namespace biaslab
