// biaslab export RUN_DIR|CHECKPOINT [--out FILE] [--checkpoint best|last|ema]
//                [--format torchscript|state_dict] [--names native|torchvision] [--set k=v]... [--json]
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "export/archive.h"

namespace biaslab::cli {

void add_export_format_options(CLI::App& cmd, ExportRequest& req) {
  cmd.add_option("--format", req.format,
                 "torchscript (a module with its metadata) or state_dict (tensors for Python's load_state_dict)")
      ->capture_default_str();
  cmd.add_option("--names", req.names,
                 "state_dict key names: native, or torchvision (its VisionTransformer layout for ViTs)")
      ->capture_default_str();
}

void print_export_report(const ExportReport& r, const ExportRequest& req, bool json) {
  const bool converted = !req.weights.empty();
  nlohmann::json out = {{"file", r.file.string()}, {converted ? "weights" : "checkpoint", r.checkpoint},
                        {"format", req.format},    {"bytes", r.bytes},
                        {"tensors", r.tensors}};
  if (req.format == "torchscript") {
    out["check_images"] = r.check_inputs;
    out["max_abs_diff"] = r.max_abs_diff;
    out["meta"] = r.meta;
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("wrote {} ({:.1f} MB, {} tensors) from {}{}\n", r.file.string(), double(r.bytes) / 1e6,
                           r.tensors, r.checkpoint, req.checkpoint == "ema" && !converted ? " (EMA weights)" : "");
  if (req.format == "torchscript")
    std::cout << fmt::format("checked: saved, loaded back and run on {} images: max |logit difference| to the "
                             "native model {:.3g}\n",
                             r.check_inputs, r.max_abs_diff);
}

void register_export(CLI::App& app) {
  struct Args {
    ExportRequest req;
    std::string target, out;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("export", "Write a trained model as TorchScript (C++ and Python load it) or as a state dict");
  cmd->add_option("target", args->target, "run directory or checkpoint file")->required();
  cmd->add_option("--out", args->out, "output file (default: RUN_DIR/export/CHECKPOINT.pt, or .state_dict.pt)");
  cmd->add_option("--checkpoint", args->req.checkpoint, "best, last, or ema (the EMA weights of the last checkpoint)")
      ->capture_default_str();
  add_export_format_options(*cmd, args->req);
  cmd->add_option("--set", args->req.overrides, "override a value of the stored config, e.g. data.root=... (repeatable)");
  cmd->add_flag("--json", args->json, "print the result as JSON");
  cmd->callback([args] {
    args->req.target = args->target;
    args->req.out = args->out;
    const ExportReport r = export_model(args->req);
    print_export_report(r, args->req, args->json);
  });
}

}  // namespace biaslab::cli
