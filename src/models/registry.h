#pragma once
// Family name -> builder. The one place that turns a ModelConfig into module Options.
#include <string>
#include <vector>

#include "config/config.h"
#include "models/classifier.h"

namespace biaslab {

/// What the data dictates about the model's input and output.
struct InputSpec {
  int64_t channels = 3;
  int64_t image_size = 32;
  int64_t num_classes = 10;
};

/// The input and output sizes a data config implies.
InputSpec input_spec(const DataConfig& data);

/// Builds the model `cfg.family` names; throws ConfigError for an unknown family.
ClassifierPtr build_model(const ModelConfig& cfg, const InputSpec& input);

/// Registered family names, sorted.
std::vector<std::string> model_families();

/// Parameters (trainable and not) of a module, not counting buffers.
int64_t count_parameters(const torch::nn::Module& module);

}  // namespace biaslab
