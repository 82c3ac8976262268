// biaslab models [--data PRESET]: list the architecture presets with their sizes.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "config/loader.h"
#include "models/registry.h"

namespace biaslab::cli {

void register_models(CLI::App& app) {
  auto data = std::make_shared<std::string>("fashion_mnist");
  CLI::App* cmd = app.add_subcommand("models", "List architecture presets (models/*.yaml)");
  cmd->add_option("--data", *data, "data preset that sets input size, channels and classes")
      ->capture_default_str();
  cmd->callback([data] {
    std::cout << fmt::format("{:<20} {:<8} {:>12}   (input from data preset '{}')\n", "preset", "family",
                             "parameters", *data);
    for (const auto& name : list_presets("models")) {
      const Config cfg = load_config_text("model: {preset: " + name + "}\ndata: {preset: " + *data + "}\n",
                                          "models/" + name + ".yaml");
      auto model = build_model(cfg.model, input_spec(cfg.data));
      std::cout << fmt::format("{:<20} {:<8} {:>12}\n", name, cfg.model.family, count_parameters(*model));
    }
  });
}

}  // namespace biaslab::cli
