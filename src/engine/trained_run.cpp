#include "engine/trained_run.h"

#include "config/loader.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/text_diff.h"
#include "data/dataset.h"
#include "engine/checkpoint.h"
#include "config/experiment_identity.h"
#include "engine/loaders.h"
#include "engine/memory_format.h"
#include "engine/run_context.h"
#include "engine/train_state.h"
#include "export/weights.h"
#include "models/registry.h"

namespace biaslab {
namespace fs = std::filesystem;
using nlohmann::json;

Config load_run_config(const fs::path& run_dir, const std::vector<std::string>& overrides) {
  const fs::path file = run_dir / "config.yaml";
  if (!fs::exists(file)) throw CheckpointError(run_dir.string() + ": no config.yaml (is this a biaslab run directory?)");
  LoadOptions lo;
  lo.resolve_presets = false;
  return load_config(file.string(), overrides, lo);
}

fs::path resolve_checkpoint(const fs::path& target, const std::string& name) {
  if (!fs::is_directory(target)) {
    if (!fs::exists(target)) throw CheckpointError(target.string() + ": no such run directory or checkpoint file");
    return target;
  }
  const fs::path checkpoint = target / "checkpoints" / (name + ".pt");
  if (!fs::exists(checkpoint))
    throw CheckpointError(target.string() + ": no checkpoints/" + name + ".pt (is this a biaslab run directory?)");
  // The checkpoint must be this run's: one copied from another run (or a config.yaml
  // edited since) would be evaluated, exported or analysed under the wrong name.
  if (fs::exists(target / "config.yaml")) {
    const std::string run = experiment_identity(read_file(target / "config.yaml"), target);
    const std::string stored = experiment_identity(read_checkpoint_meta(checkpoint.string()).config_yaml, target);
    if (run != stored)
      throw CheckpointError(checkpoint.string() + " does not belong to the run in " + target.string() +
                            ": the config stored in the checkpoint differs from config.yaml (" +
                            describe_difference(first_line_difference(run, stored), "config.yaml", "checkpoint") +
                            "); it was copied from another run, or config.yaml was edited after training");
  }
  return checkpoint;
}

TrainedModel load_trained_model(const fs::path& checkpoint, bool ema, const std::vector<std::string>& overrides) {
  const CheckpointContents meta = read_checkpoint_meta(checkpoint.string());
  LoadOptions lo;
  lo.resolve_presets = false;
  TrainedModel out;
  out.cfg = load_config_text(meta.config_yaml, checkpoint.string() + " (stored config)", overrides, lo);
  if (ema && out.cfg.train.ema_decay <= 0)
    throw ConfigError("--ema: " + checkpoint.string() + " was trained without EMA (train.ema_decay is 0)");
  out.model = build_model(out.cfg.model, input_spec(out.cfg.data));
  if (ema) {
    ClassifierPtr trained = build_model(out.cfg.model, input_spec(out.cfg.data));
    load_checkpoint(checkpoint.string(), *trained, nullptr, out.model.get());
  } else {
    load_checkpoint(checkpoint.string(), *out.model, nullptr);
  }
  try {
    const TrainState state = train_state_from_json(meta.state_json);
    out.epoch = state.epoch;
    out.step = state.step;
  } catch (const std::exception& e) {
    throw CheckpointError(checkpoint.string() + ": " + e.what());
  }
  out.biaslab_version = meta.biaslab_version;
  return out;
}

TrainedModel load_weights_model(const fs::path& weights, const fs::path& config,
                                const std::vector<std::string>& overrides) {
  if (config.empty())
    throw ConfigError("--weights " + weights.string() + ": needs -c CONFIG, the config of the model and data they are for");
  TrainedModel out;
  out.cfg = load_config(config.string(), overrides);
  out.model = build_model(out.cfg.model, input_spec(out.cfg.data));
  const StateDict sd = read_state_dict(weights.string());
  load_state_dict(*out.model, sd, {}, weights.string());
  return out;
}

json read_run_summary(const fs::path& checkpoint) {
  const fs::path file = checkpoint.parent_path().parent_path() / "summary.json";
  if (checkpoint.parent_path().filename() != "checkpoints" || !fs::exists(file)) return nullptr;
  try {
    return json::parse(read_file(file));
  } catch (const json::exception& e) {
    throw CheckpointError(file.string() + ": unreadable: " + e.what());
  }
}

json recorded_test_metrics(const fs::path& checkpoint, int64_t epoch, bool ema) {
  const std::string stem = checkpoint.stem().string();
  if (stem != "best" && stem != "last") return nullptr;
  const json summary = read_run_summary(checkpoint);
  if (summary.is_null()) return nullptr;
  const json entry = summary.value(stem == "best" ? "best" : "final", json::object());
  const std::string prefix = ema ? "ema_test_" : "test_";
  // The recorded numbers belong to this checkpoint only if it is the one summary.json describes.
  if (entry.value("epoch", int64_t(-1)) != epoch || !entry.contains(prefix + "acc") || !entry.contains(prefix + "loss"))
    return nullptr;
  json recorded = {{"loss", entry[prefix + "loss"]}, {"acc", entry[prefix + "acc"]}};
  if (entry.contains(prefix + "top5_acc")) recorded["top5_acc"] = entry[prefix + "top5_acc"];
  return recorded;
}

EvalReport evaluate_run(const EvalRequest& req) {
  if (req.checkpoint != "best" && req.checkpoint != "last")
    throw ConfigError("--checkpoint: '" + req.checkpoint + "' is not one of best, last");
  const bool foreign = !req.weights.empty();
  if (foreign && !req.target.empty())
    throw ConfigError("--weights: evaluates a weights file instead of a run; give a run directory or --weights, not both");
  if (foreign && req.ema) throw ConfigError("--ema: a weights file has no EMA copy; it applies to run directories");
  if (!foreign && !req.config.empty())
    throw ConfigError("-c/--config: applies with --weights; a run is evaluated with the config stored in it (use --set)");
  EvalReport report;
  const fs::path checkpoint = foreign ? req.weights : resolve_checkpoint(req.target, req.checkpoint);
  report.checkpoint = checkpoint.string();
  TrainedModel trained = foreign ? load_weights_model(req.weights, req.config, req.overrides)
                                 : load_trained_model(checkpoint, req.ema, req.overrides);
  const Config& cfg = trained.cfg;
  // The precision the run computed in (summary.json) when the config says auto.
  const json summary = foreign ? json() : read_run_summary(checkpoint);
  const RunContext ctx =
      evaluation_context(cfg, summary.is_object() ? summary.value("precision", std::string()) : std::string());
  ClassifierPtr model = trained.model;
  model->to(ctx.device);
  if (uses_channels_last(cfg, *model)) to_channels_last(*model);  // the layout it was trained and evaluated in
  Dataset data = load_dataset(cfg.data);
  Loader test(data.test, loader_options(cfg, data, cfg.train.eval_batch_size, false));
  report.test = evaluate(*model, test, ctx.device, ctx.precision);
  report.weights_fingerprint = weights_fingerprint(*model);
  report.epoch = trained.epoch;
  report.step = trained.step;
  if (!foreign) report.recorded = recorded_test_metrics(checkpoint, trained.epoch, req.ema);
  return report;
}

}  // namespace biaslab
