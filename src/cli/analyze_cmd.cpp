// biaslab analyze RUN_DIR [--checkpoint best|last] [--images N] [--show K | --image FILE...]
//                 [--query cls|center|ROW,COL] [--probe-images N] [--max-shift K] [--out DIR] [--set k=v]...
#include <CLI/CLI.hpp>

#include <iostream>

#include "analysis/analyze.h"
#include "cli/commands.h"

namespace biaslab::cli {

void register_analyze(CLI::App& app) {
  struct Args {
    AnalyzeRequest req;
    std::string run_dir, out;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Attention maps, mean attention distance, dynamic kernels, effective receptive field, filters");
  cmd->add_option("run_dir", args->run_dir, "run directory (or a checkpoint file with --out)")->required();
  cmd->add_option("--checkpoint", args->req.checkpoint, "best or last")->capture_default_str();
  cmd->add_option("--images", args->req.images, "test images the statistics average over")->capture_default_str();
  cmd->add_option("--show", args->req.show, "test images drawn in the pictures (without --image)")->capture_default_str();
  cmd->add_option("--image", args->req.image_files, "image files to draw instead of test images (repeatable)");
  cmd->add_option("--query", args->req.query, "query of the attention pictures: cls, center, or ROW,COL (a patch)")
      ->capture_default_str();
  cmd->add_option("--probe-images", args->req.probe_images, "test images the bias probes evaluate")->capture_default_str();
  cmd->add_option("--max-shift", args->req.max_shift, "the translation probe's largest shift, in pixels")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "output folder (default: RUN_DIR/analysis)");
  cmd->add_option("--set", args->req.overrides, "override a value of the stored config, e.g. data.root=... (repeatable)");
  cmd->callback([args] {
    args->req.run_dir = args->run_dir;
    args->req.out = args->out;
    const AnalyzeReport r = analyze_run(args->req);
    for (const auto& f : r.files) std::cout << "wrote " << f.string() << "\n";
  });
}

}  // namespace biaslab::cli
