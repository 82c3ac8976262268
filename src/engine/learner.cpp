#include "engine/learner.h"

#include <filesystem>

#include "config/suggest.h"
#include "core/errors.h"
#include "core/logging.h"
#include "engine/checkpoint.h"
#include "engine/memory_format.h"
#include "engine/optimizer.h"
#include "export/weights.h"
#include "models/registry.h"
#include "models/summary.h"

namespace biaslab {
namespace fs = std::filesystem;

namespace {

// model.init_from: copies the file's weights into `model` (all but model.init_skip);
// returns the line for the log ("" without init_from).
std::string init_from_file(Classifier& model, const ModelConfig& m) {
  if (m.init_from.empty()) return "";
  if (!fs::is_regular_file(m.init_from))
    throw ConfigError("model.init_from: no such file '" + m.init_from +
                      "' (a state dict or TorchScript file; relative paths are from the working directory)");
  size_t n = 0;
  try {
    n = load_state_dict(model, read_state_dict(m.init_from), m.init_skip, m.init_from);
  } catch (const CheckpointError& e) {
    // The one place a partial load is a choice: say how to make it.
    throw CheckpointError(std::string(e.what()) + "\n  (model.init_skip lists key prefixes to leave at their "
                          "initialisation, e.g. [head] or [fc] for a new number of classes)");
  }
  return fmt::format("model: {} tensors initialised from {}{}; weights fingerprint {}", n, m.init_from,
                     m.init_skip.empty() ? "" : " (kept fresh: " + join(m.init_skip) + ")",
                     weights_fingerprint(model));
}

}  // namespace

EmaModel make_ema(const Config& cfg, Classifier& model, c10::Device device) {
  EmaModel out;
  if (cfg.train.ema_decay <= 0) return out;
  out.shadow = build_model(cfg.model, input_spec(cfg.data));
  out.shadow->to(device);
  if (uses_channels_last(cfg, *out.shadow)) to_channels_last(*out.shadow);
  out.shadow->eval();
  out.ema = std::make_unique<Ema>(model, *out.shadow, cfg.train.ema_decay);
  return out;
}

Learner make_learner(const Config& cfg, c10::Device device, bool init_from) {
  Learner l;
  l.model = build_model(cfg.model, input_spec(cfg.data));
  if (init_from) l.init_note = init_from_file(*l.model, cfg.model);
  // FLOPs per image (2 x multiply-accumulates, as `biaslab summary`), before any training.
  l.flops_per_image = 2 * summarize(*l.model, cfg.data.channels, cfg.data.image_size).macs;
  l.model->to(device);
  l.channels_last = uses_channels_last(cfg, *l.model);
  if (l.channels_last) to_channels_last(*l.model);
  l.parameters = count_parameters(*l.model);
  EmaModel averaged = make_ema(cfg, *l.model, device);
  l.shadow = averaged.shadow;
  l.ema = std::move(averaged.ema);
  l.optimizer = make_optimizer(*l.model, cfg.optim);
  return l;
}

void apply_init_from(Learner& learner, const ModelConfig& cfg) {
  learner.init_note = init_from_file(*learner.model, cfg);
  if (learner.ema) learner.ema->reset_to_model();
}

std::vector<torch::Tensor> learner_tensors(Learner& learner) {
  std::vector<torch::Tensor> tensors = learner.model->parameters();
  for (const auto& b : learner.model->buffers()) tensors.push_back(b);
  if (learner.shadow) {
    for (const auto& p : learner.shadow->parameters()) tensors.push_back(p);
    for (const auto& b : learner.shadow->buffers()) tensors.push_back(b);
  }
  return tensors;
}

}  // namespace biaslab
