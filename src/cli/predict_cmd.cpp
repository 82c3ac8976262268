// biaslab predict MODEL.pt IMAGE|FOLDER... [--topk K] [--batch-size N] [--threads N] [--json]
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.h"
#include "cli/validators.h"
#include "core/runtime.h"
#include "export/predict.h"

namespace biaslab::cli {

void register_predict(CLI::App& app) {
  struct Args {
    PredictRequest req;
    int threads = 0;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("predict", "Classify images with a model written by `biaslab export`");
  cmd->add_option("model", args->req.model, "TorchScript archive from `biaslab export`")->required();
  cmd->add_option("images", args->req.inputs, "image files and folders (searched recursively)")->required();
  cmd->add_option("--topk", args->req.topk, "classes to list per image")->capture_default_str();
  cmd->add_option("--batch-size", args->req.batch_size, "images per forward pass")->capture_default_str();
  cmd->add_option("--threads", args->threads, "intra-op threads (0: all cores)")->check(at_least(0))->capture_default_str();
  cmd->add_flag("--json", args->json, "print the result as JSON");
  cmd->callback([args] {
    set_threads(args->threads);
    const PredictResult r = predict(args->req);
    const auto& names = r.class_names;
    const double accuracy = r.labelled > 0 ? double(r.correct) / double(r.labelled) : 0.0;
    if (args->json) {
      nlohmann::json items = nlohmann::json::array();
      for (const auto& p : r.items) {
        nlohmann::json top = nlohmann::json::array();
        for (const auto& [c, prob] : p.top) top.push_back({{"class", c}, {"name", names[size_t(c)]}, {"prob", prob}});
        nlohmann::json item = {{"file", p.file}, {"top", top}};
        if (p.label >= 0) item["label"] = p.label;
        items.push_back(item);
      }
      nlohmann::json out = {{"model", args->req.model}, {"images", r.items.size()}, {"predictions", items}};
      if (r.labelled > 0) out["labelled"] = r.labelled, out["correct"] = r.correct, out["accuracy"] = accuracy;
      std::cout << out.dump(2) << "\n";
      return;
    }
    for (const auto& p : r.items) {
      std::cout << p.file << ":";
      for (const auto& [c, prob] : p.top) std::cout << fmt::format("  {} {:.4f}", names[size_t(c)], prob);
      std::cout << "\n";
    }
    if (r.labelled > 0)
      std::cout << fmt::format("accuracy over the {} images whose folder names a class: {}/{} = {:.2f}%\n", r.labelled,
                               r.correct, r.labelled, 100.0 * accuracy);
  });
}

}  // namespace biaslab::cli
