// biaslab convert WEIGHTS -c CONFIG --out FILE [--format torchscript|state_dict]
//                 [--names native|torchvision] [--set k=v]... [--json]
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "export/archive.h"

namespace biaslab::cli {

void register_convert(CLI::App& app) {
  struct Args {
    ExportRequest req;
    std::string weights, config, out;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Turn a weights file (a PyTorch state dict or TorchScript, torchvision names too) into a biaslab "
                 "export, without training");
  cmd->add_option("weights", args->weights, "the weights file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-c,--config", args->config, "config of the model (and data) the weights are for")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "output file")->required();
  add_export_format_options(*cmd, args->req);
  cmd->add_option("--set", args->req.overrides, "override a config value, e.g. data.mean=[...] (repeatable)");
  cmd->add_flag("--json", args->json, "print the result as JSON");
  cmd->callback([args] {
    args->req.weights = args->weights;
    args->req.config = args->config;
    args->req.out = args->out;
    const ExportReport r = export_model(args->req);
    print_export_report(r, args->req, args->json);
  });
}

}  // namespace biaslab::cli
