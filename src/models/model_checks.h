#pragma once
// The cross-field rules of the model families' config keys (model.* against each other
// and against data.image_size), checked by the config loader after every key is read.
// One family's rules live beside it: resnet_checks.cpp, vit_checks.cpp.
#include "config/checker.h"
#include "config/config.h"

namespace biaslab {

/// The rules of `m.family` (and, for a hybrid, of its tokenizer).
void check_model_config(const ModelConfig& m, const DataConfig& d, const ConfigChecker& k);

/// A ResNet trunk (family resnet, or a hybrid's resnet tokenizer): stages and widths.
void check_resnet_config(const ModelConfig& m, const ConfigChecker& k);
/// A ViT (family vit, or a hybrid's transformer): the token grid, heads, attention options.
void check_vit_config(const ModelConfig& m, const DataConfig& d, const ConfigChecker& k);

}  // namespace biaslab
