// biaslab summary -c CONFIG [--set k=v]... [--json]: the configured model stage by stage.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cli/commands.h"
#include "config/loader.h"
#include "engine/memory_budget.h"
#include "models/registry.h"
#include "models/summary.h"

namespace biaslab::cli {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

std::string field_text(int64_t rf) { return rf == StageSummary::kGlobal ? "global" : std::to_string(rf); }

}  // namespace

void register_summary(CLI::App& app) {
  struct Args {
    std::string config;
    std::vector<std::string> sets;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "summary", "Print the configured model stage by stage: output shape, parameters, FLOPs, receptive field");
  cmd->add_option("-c,--config", args->config, "experiment YAML (configs/*.yaml)")->required();
  cmd->add_option("--set", args->sets, "override a config value, e.g. --set model.depth=4 (repeatable)");
  cmd->add_flag("--json", args->json, "machine-readable output");
  cmd->callback([args] {
    const Config cfg = load_config(args->config, args->sets);
    check_memory_budget(cfg, /*activations_in_host_memory=*/false);  // only the model is built
    const InputSpec in = input_spec(cfg.data);
    auto model = build_model(cfg.model, in);
    const ModelSummary s = summarize(*model, in.channels, in.image_size);
    const std::string model_name = cfg.model.preset.empty() ? cfg.model.family : cfg.model.preset;
    if (args->json) {
      nlohmann::json stages = nlohmann::json::array();
      for (const auto& st : s.stages)
        stages.push_back({{"name", st.name},
                          {"output", st.output_shape},
                          {"parameters", st.parameters},
                          {"flops", 2 * st.macs},
                          {"macs", st.macs},
                          {"receptive_field", st.receptive_field == StageSummary::kGlobal
                                                  ? nlohmann::json("global")
                                                  : nlohmann::json(st.receptive_field)}});
      nlohmann::json out = {{"model", model_name},
                            {"family", cfg.model.family},
                            {"input", {in.channels, in.image_size, in.image_size}},
                            {"num_classes", in.num_classes},
                            {"parameters", s.parameters},
                            {"flops", 2 * s.macs},
                            {"macs", s.macs},
                            {"stages", stages}};
      std::cout << out.dump(2) << "\n";
      return;
    }
    std::cout << fmt::format("model: {} ({}), input {}x{}x{}, {} classes\n", model_name, cfg.model.family,
                             in.channels, in.image_size, in.image_size, in.num_classes);
    std::cout << fmt::format("{:<28} {:>14} {:>12} {:>12} {:>16}\n", "stage", "output", "parameters", "MFLOPs",
                             "receptive field");
    for (const auto& st : s.stages)
      std::cout << fmt::format("{:<28} {:>14} {:>12} {:>12.2f} {:>16}\n", st.name, shape_text(st.output_shape),
                               st.parameters, 2e-6 * double(st.macs), field_text(st.receptive_field));
    std::cout << fmt::format("{:<28} {:>14} {:>12} {:>12.2f}\n", "total", "", s.parameters, 2e-6 * double(s.macs));
    std::cout << fmt::format(
        "FLOPs per image = 2 x multiply-accumulates of convolutions, linear layers and matrix products "
        "({:.4f} GMACs; torchvision's \"GFLOPS\" column counts MACs). Receptive field in input pixels, along "
        "the main path.\n",
        1e-9 * double(s.macs));
  });
}

}  // namespace biaslab::cli
