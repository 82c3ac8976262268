#include "export/torchscript.h"

#include <torch/torch.h>

#include "core/errors.h"
#include "export/script_builder.h"
#include "export/scriptable.h"
#include "models/classifier.h"

namespace biaslab {
namespace {

// The metadata as attributes of the root module.
script::Members metadata_attributes(const ScriptMetadata& meta) {
  c10::List<std::string> names;
  for (const auto& n : meta.class_names) names.push_back(n);
  script::Members attrs;
  attrs.attributes = {
      {"class_names", c10::ListType::ofStrings(), names},
      {"image_size", c10::IntType::get(), meta.image_size},
      {"in_chans", c10::IntType::get(), meta.in_chans},
      {"mean", c10::ListType::ofFloats(), c10::List<double>(meta.mean)},
      {"std", c10::ListType::ofFloats(), c10::List<double>(meta.std)},
      {"family", c10::StringType::get(), meta.family},
      {"preset", c10::StringType::get(), meta.preset},
      {"biaslab_version", c10::StringType::get(), meta.biaslab_version},
  };
  return attrs;
}

}  // namespace

torch::jit::Module to_torchscript(const Classifier& model, const ScriptMetadata& meta) {
  const auto* root = dynamic_cast<const Scriptable*>(&model);
  if (!root) throw Error("export: no TorchScript translation for a model of type " + model.name());
  script::Builder builder(meta.image_size, metadata_attributes(meta));
  torch::jit::Module out = root->to_script(builder, "");
  out.eval();
  return out;
}

}  // namespace biaslab
