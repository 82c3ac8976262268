// engine/memory_budget: the estimate tracks the real parameter count, and a run that
// cannot fit is refused naming the keys that drive it.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "core/errors.h"
#include "engine/memory_budget.h"
#include "models/registry.h"

using namespace biaslab;

namespace {

Config config(const std::string& preset, const std::vector<std::string>& sets = {}) {
  return load_config_text("model: {preset: " + preset + "}\ndata: {preset: fashion_mnist}\n", "exp.yaml", sets);
}

std::string error_of(const Config& c) {
  try {
    check_memory_budget(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(MemoryBudget, ParameterEstimateIsWithinAFewPercentOfTheBuiltModel) {
  for (const std::string preset : {"resnet20", "resnet18", "resnet50", "vit_lite_p4", "vit_tiny_p4", "convit_lite_p4",
                                   "vit_hybrid_lite", "cct_lite"}) {
    const Config c = config(preset);
    const double built = double(count_parameters(*build_model(c.model, input_spec(c.data))));
    const double estimated = estimate_memory(c).parameters;
    EXPECT_NEAR(estimated / built, 1.0, 0.15) << preset << ": estimated " << estimated << ", built " << built;
  }
}

TEST(MemoryBudget, ShippedConfigsFitAndTyposAreRefusedNamingTheKeys) {
  for (const std::string preset : {"resnet20", "vit_lite_p4", "vit_hybrid_lite"})
    EXPECT_EQ(error_of(config(preset, {"runtime.max_memory_gb=2"})), "") << preset << " should fit in 2 GiB";
  const std::string depth = error_of(config("vit_lite_p4", {"model.depth=10000"}));
  EXPECT_NE(depth.find("model.depth = 10000"), std::string::npos) << depth;
  EXPECT_NE(depth.find("runtime.max_memory_gb"), std::string::npos) << depth;
  const std::string batch = error_of(config("resnet20", {"train.batch_size=1000000000000"}));
  EXPECT_NE(batch.find("train.batch_size = 1000000000000"), std::string::npos) << batch;
  const std::string wide = error_of(config("resnet20", {"model.widths=[100000, 100000, 100000]"}));
  EXPECT_NE(wide.find("the model (model.layers, model.widths)"), std::string::npos) << wide;
  const std::string synth = error_of(load_config_text(
      "model: {preset: resnet20}\ndata: {preset: synth_texture, train_size: 100000000000}\n", "exp.yaml"));
  EXPECT_NE(synth.find("data.train_size = 100000000000"), std::string::npos) << synth;
  // The limit is a key: a machine with more memory (or a wrong estimate) can raise it.
  EXPECT_EQ(error_of(config("vit_lite_p4", {"train.batch_size=4096", "runtime.max_memory_gb=100000"})), "");
  EXPECT_NE(error_of(config("vit_lite_p4", {"runtime.max_memory_gb=0.01"})).find("0.01 GiB runtime.max_memory_gb allows"),
            std::string::npos);
}
