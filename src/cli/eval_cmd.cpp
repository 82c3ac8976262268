// biaslab eval RUN_DIR|CHECKPOINT [--checkpoint best|last] [--ema] [--set k=v]... [--json]
// biaslab eval --weights FILE -c CONFIG [--set k=v]... [--json]
#include <CLI/CLI.hpp>

#include <cmath>
#include <iostream>

#include "cli/commands.h"
#include "engine/trained_run.h"

namespace biaslab::cli {

void register_eval(CLI::App& app) {
  struct Args {
    EvalRequest req;
    std::string target;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("eval", "Recompute test metrics from a run's checkpoint");
  cmd->add_option("target", args->target, "run directory or checkpoint file");
  cmd->add_option("--weights", args->req.weights,
                  "evaluate a weights file (state dict or TorchScript, torchvision names too) instead of a run")
      ->check(CLI::ExistingFile);
  cmd->add_option("-c,--config", args->req.config, "with --weights: the config of their model and test data")
      ->check(CLI::ExistingFile);
  cmd->add_option("--checkpoint", args->req.checkpoint, "which checkpoint of a run directory: best or last")
      ->check(CLI::IsMember({"best", "last"}))
      ->capture_default_str();
  cmd->add_flag("--ema", args->req.ema, "evaluate the EMA weights (runs trained with train.ema_decay > 0)");
  cmd->add_option("--set", args->req.overrides,
                  "override a value of the stored config, e.g. data.root=... (repeatable)");
  cmd->add_flag("--json", args->json, "print the result as JSON");
  cmd->callback([args] {
    if (args->target.empty() && args->req.weights.empty())
      throw CLI::RequiredError("a run directory or checkpoint (eval RUN_DIR), or --weights FILE -c CONFIG");
    args->req.target = args->target;
    const EvalReport r = evaluate_run(args->req);
    nlohmann::json out = {{"checkpoint", r.checkpoint},
                          {"epoch", r.epoch},
                          {"step", r.step},
                          {"ema", args->req.ema},
                          {"weights_fingerprint", r.weights_fingerprint},
                          {"test_loss", r.test.loss},
                          {"test_acc", r.test.accuracy},
                          {"test_size", r.test.count}};
    if (!std::isnan(r.test.top5)) out["test_top5_acc"] = r.test.top5;
    if (!r.recorded.is_null()) {
      const double acc = r.recorded.at("acc").get<double>();
      const double loss = r.recorded.at("loss").get<double>();
      out["recorded_test_acc"] = acc;
      out["recorded_test_loss"] = loss;
      bool matches = acc == r.test.accuracy && std::abs(loss - r.test.loss) <= 1e-6 * std::max(1.0, loss);
      if (r.recorded.contains("top5_acc")) {
        out["recorded_test_top5_acc"] = r.recorded["top5_acc"];
        matches = matches && r.recorded["top5_acc"].get<double>() == r.test.top5;
      }
      out["matches_recorded"] = matches;
    }
    if (args->json) {
      std::cout << out.dump(2) << "\n";
      return;
    }
    std::cout << (args->req.weights.empty() ? "checkpoint: " : "weights: ") << r.checkpoint
              << (args->req.ema ? " (EMA weights)" : "")
              << (args->req.weights.empty() ? fmt::format(", epoch {}, step {}", r.epoch, r.step) : std::string())
              << "\n"
              << fmt::format("test: {} images, loss {:.6f}, accuracy {:.2f}%{}\n", r.test.count, r.test.loss,
                             100 * r.test.accuracy,
                             std::isnan(r.test.top5) ? "" : fmt::format(", top-5 {:.2f}%", 100 * r.test.top5));
    if (out.contains("matches_recorded")) {
      std::cout << fmt::format("recorded in summary.json: loss {:.6f}, accuracy {:.2f}% -> {}\n",
                               out["recorded_test_loss"].get<double>(), 100 * out["recorded_test_acc"].get<double>(),
                               out["matches_recorded"].get<bool>() ? "match" : "MISMATCH");
    }
  });
}

}  // namespace biaslab::cli
