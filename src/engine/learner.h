#pragma once
// What a run trains, built from its config: the model on its device and layout, the EMA
// shadow copy and the optimizer.
#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/ema.h"
#include "models/classifier.h"

namespace biaslab {

/// train.ema_decay > 0: a shadow copy of `model` on `device` (eval mode) and the Ema that
/// averages into it; both null otherwise.
struct EmaModel {
  ClassifierPtr shadow;
  std::unique_ptr<Ema> ema;
};
EmaModel make_ema(const Config& cfg, Classifier& model, c10::Device device);

struct Learner {
  ClassifierPtr model;
  ClassifierPtr shadow;      ///< the EMA copy (train.ema_decay > 0), else null
  std::unique_ptr<Ema> ema;  ///< averages `model` into `shadow`
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  int64_t parameters = 0;
  int64_t flops_per_image = 0;  ///< 2 x multiply-accumulates, as `biaslab summary`
  bool channels_last = false;
  std::string init_note;  ///< the log line of model.init_from ("" when not applied)
};

/// Builds `cfg`'s model (with model.init_from's weights when `init_from`), moves it to
/// `device` and its memory format, and builds the EMA copy and the optimizer.
Learner make_learner(const Config& cfg, c10::Device device, bool init_from);

/// model.init_from applied after make_learner (a resume that turned out to be a fresh
/// start): the weights, the EMA copy reset to them, and the log line.
void apply_init_from(Learner& learner, const ModelConfig& cfg);

/// The model's and the EMA copy's parameters and buffers, for a broadcast.
std::vector<torch::Tensor> learner_tensors(Learner& learner);

}  // namespace biaslab
