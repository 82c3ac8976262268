// biaslab models [--data PRESET] [--image-size N] [--channels C] [--classes K]: list the
// architecture presets with their sizes for that input.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "cli/validators.h"
#include "config/loader.h"
#include "core/errors.h"
#include "models/registry.h"
#include "models/summary.h"

namespace biaslab::cli {

void register_models(CLI::App& app) {
  struct Args {
    std::string data = "fashion_mnist";
    int64_t image_size = 0, channels = 0, classes = 0;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("models", "List architecture presets (models/*.yaml) with parameters and FLOPs");
  cmd->add_option("--data", args->data, "data preset that sets input size, channels and classes")
      ->capture_default_str();
  cmd->add_option("--image-size", args->image_size, "input side instead of the data preset's")->check(at_least(1));
  cmd->add_option("--channels", args->channels, "input channels instead of the data preset's")->check(at_least(1));
  cmd->add_option("--classes", args->classes, "classes instead of the data preset's")->check(CLI::Range(2, 1 << 30));
  cmd->callback([args] {
    std::vector<std::string> sets;
    if (args->image_size) sets.push_back("data.image_size=" + std::to_string(args->image_size));
    if (args->channels) {
      std::string values;
      for (int64_t c = 0; c < args->channels; ++c) values += (c ? ", " : "") + std::string("0.5");
      sets.push_back("data.channels=" + std::to_string(args->channels));
      sets.push_back("data.mean=[" + values + "]");
      sets.push_back("data.std=[" + values + "]");
    }
    if (args->classes) {
      sets.push_back("data.num_classes=" + std::to_string(args->classes));
      sets.push_back("data.class_names=[]");
    }
    const Config data_cfg =
        load_config_text("model: {family: resnet}\ndata: {preset: " + args->data + "}\n", "models", sets);
    const InputSpec in = input_spec(data_cfg.data);
    std::cout << fmt::format("{:<18} {:<8} {:>12} {:>12}   (input {}x{}x{}, {} classes)\n", "preset", "family",
                             "parameters", "MFLOPs", in.channels, in.image_size, in.image_size, in.num_classes);
    for (const auto& name : list_presets("models")) {
      Config cfg;
      try {
        cfg = load_config_text("model: {preset: " + name + "}\ndata: {preset: " + args->data + "}\n",
                               "models/" + name + ".yaml", sets);
      } catch (const ConfigError& e) {
        // e.g. a 16 px patch on 28 px images: say so instead of failing the whole list.
        std::cout << fmt::format("{:<18} {:<8} {:>12} {:>12}   not for this input: {}\n", name, "", "-", "-",
                                 e.what());
        continue;
      }
      auto model = build_model(cfg.model, in);
      const auto s = summarize(*model, in.channels, in.image_size);
      std::cout << fmt::format("{:<18} {:<8} {:>12} {:>12.1f}\n", name, cfg.model.family, s.parameters,
                               2e-6 * double(s.macs));
    }
  });
}

}  // namespace biaslab::cli
