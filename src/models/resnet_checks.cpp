#include "models/model_checks.h"

namespace biaslab {

void check_resnet_config(const ModelConfig& m, const ConfigChecker& k) {
  k.require(!m.layers.empty(), "model.layers", "expected at least one stage");
  k.require(m.layers.size() == m.widths.size(), "model.widths",
            "expected one width per stage: model.layers has " + std::to_string(m.layers.size()) +
                " stages, model.widths has " + std::to_string(m.widths.size()) + " values");
}

void check_model_config(const ModelConfig& m, const DataConfig& d, const ConfigChecker& k) {
  if (m.family == "resnet" || (m.family == "hybrid" && m.tokenizer == "resnet")) check_resnet_config(m, k);
  if (m.family == "hybrid" && m.tokenizer == "conv") {
    k.require(!m.widths.empty(), "model.widths", "the conv tokenizer needs at least one layer (one width per layer)");
    k.require(m.tokenizer_kernel % 2 == 1, "model.tokenizer_kernel",
              "expected an odd kernel size (padding keeps the size), got " + std::to_string(m.tokenizer_kernel));
  }
  if (m.family == "vit" || m.family == "hybrid") check_vit_config(m, d, k);
}

}  // namespace biaslab
