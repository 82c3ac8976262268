// biaslab bench -c CONFIG [--set k=v]... [--only train,infer,loader] [--steps N] [--warmup W]
// [--repeats R] [--json]: training, inference and loader throughput of the configured
// model at its precision, threads and device, and the model FLOPs utilisation against
// a matrix-multiply peak measured in the same process.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <set>

#include "cli/commands.h"
#include "cli/validators.h"
#include "config/loader.h"
#include "core/build_info.h"
#include "core/cpu_info.h"
#include "core/errors.h"
#include "core/kernel_log.h"
#include "core/runtime.h"
#include "core/torch_compat.h"
#include "data/dataset.h"
#include "engine/bench.h"
#include "engine/memory_budget.h"
#include "engine/memory_format.h"
#include "engine/precision.h"
#include "engine/run_context.h"
#include "models/registry.h"
#include "models/summary.h"

namespace biaslab::cli {
namespace {
using nlohmann::json;

struct Args {
  std::string config;
  std::vector<std::string> sets;
  std::vector<std::string> only = {"train", "infer", "loader"};
  BenchSettings settings;
  bool json = false;
};

json rate_json(const Rate& r) { return {{"images_per_s", r.median}, {"min", r.min}, {"max", r.max}}; }

// Model FLOP/s and utilisation of a rate: training counts 3x the forward FLOPs (the
// backward pass costs twice the forward: the convention of Kaplan et al. 2020, PaLM's MFU
// and nanoGPT), inference 1x.
json compute_json(const Rate& r, double flops_per_image, double peak) {
  json j = rate_json(r);
  j["flops_per_s"] = r.median * flops_per_image;
  j["mfu"] = peak > 0 ? r.median * flops_per_image / peak : 0.0;
  return j;
}

void run_bench(const Args& a) {
  Config cfg = load_config(a.config, a.sets);
  const std::set<std::string> only(a.only.begin(), a.only.end());
  const RunContext ctx = process_context(cfg, "use bf16 on the CPU");
  const c10::Device device = ctx.device;
  cfg.train.precision = ctx.precision;
  const int threads = ctx.threads;
  check_memory_budget(cfg, /*activations_in_host_memory=*/!device.is_cuda());
  if (!a.settings.trace.empty()) {
    if (!only.count("train")) throw ConfigError("--trace records training steps: --only must include train");
    std::ofstream probe(a.settings.trace);
    if (!probe) throw ConfigError("--trace " + a.settings.trace + ": cannot write this file");
  }
  // The dataset is read (and bad data reported) before anything is timed.
  std::optional<Dataset> data;
  if (only.count("loader")) data = load_dataset(cfg.data);
  const InputSpec in = input_spec(cfg.data);
  int64_t params = 0, macs = 0;
  bool channels_last = false;
  {
    auto model = build_model(cfg.model, in);
    params = count_parameters(*model);
    macs = summarize(*model, in.channels, in.image_size).macs;
    model->to(device);
    channels_last = uses_channels_last(cfg, *model);
  }
  const double fwd_flops = 2.0 * double(macs);
  const std::string model_name = cfg.model.preset.empty() ? cfg.model.family : cfg.model.preset;
  const BenchSettings& s = a.settings;
  if (!a.json) {
    std::cout << fmt::format("biaslab bench: {} ({}), {} parameters, {:.1f} MFLOPs per image (forward)\n", model_name,
                             cfg.model.family, params, fwd_flops / 1e6);
    std::cout << fmt::format("  input {}x{}x{}, precision {}, {} thread(s), device {}{}, LibTorch {}\n", in.channels,
                             in.image_size, in.image_size, cfg.train.precision, threads, device.str(),
                             channels_last ? ", channels-last" : "", compat::torch_version());
    std::cout << fmt::format("  CPU: {}\n", cpu_info().str());
    if (!blas_info().empty()) std::cout << fmt::format("  BLAS: {}\n", blas_info());
    std::cout << fmt::format("  {} warm-up steps, then {} repetitions x {} steps: median (min - max)\n", s.warmup,
                             s.repeats, s.steps);
    std::cout.flush();
  }
  json out = {{"config", a.config},
              {"model", {{"name", model_name}, {"family", cfg.model.family}, {"preset", cfg.model.preset},
                         {"params", params}, {"flops_per_image", fwd_flops}}},
              {"input", {{"channels", in.channels}, {"image_size", in.image_size}, {"num_classes", in.num_classes}}},
              {"batch_size", cfg.train.batch_size},
              {"eval_batch_size", cfg.train.eval_batch_size},
              {"precision", cfg.train.precision},
              {"threads", threads},
              {"cpu", cpu_info()},
              {"blas", blas_info()},
              {"blas_openmp_build", build::kOpenBlasOpenMP},
              {"device", device.str()},
              {"memory_format", channels_last ? "channels_last" : "contiguous"},
              {"libtorch_version", compat::torch_version()},
              {"biaslab_version", build::kVersion},
              {"git_commit", build::kGitCommit},
              {"git_dirty", build::kGitDirty},
              {"optim", {{"name", cfg.optim.name}, {"lr", cfg.optim.lr}, {"weight_decay", cfg.optim.weight_decay},
                         {"momentum", cfg.optim.momentum}, {"nesterov", cfg.optim.nesterov},
                         {"betas", cfg.optim.betas}, {"eps", cfg.optim.eps}}},
              {"label_smoothing", cfg.train.label_smoothing},
              {"ema_decay", cfg.train.ema_decay},
              {"settings", {{"warmup", s.warmup}, {"steps", s.steps}, {"repeats", s.repeats}}}};

  double peak = 0.0;
  if (only.count("train") || only.count("infer")) {
    const DensePeak p = dense_peak(cfg.train.precision, device, s);
    peak = p.flops_per_s.median;
    out["peak"] = {{"flops_per_s", peak}, {"min", p.flops_per_s.min}, {"max", p.flops_per_s.max},
                   {"kernel", p.kernel}, {"precision", cfg.train.precision}};
  }
  auto line = [&](const std::string& what, int64_t batch, const Rate& r, double flops_per_image) {
    if (a.json) return;
    std::cout << fmt::format("  {:<6} batch {:<5} {:>9.0f} images/s ({:.0f} - {:.0f})  {:>8.1f} ms/batch", what,
                             batch, r.median, r.min, r.max, 1e3 * double(batch) / std::max(r.median, 1e-9));
    if (flops_per_image > 0)
      std::cout << fmt::format("  {:>7.1f} GFLOP/s  MFU {:.1f}%", r.median * flops_per_image / 1e9,
                               peak > 0 ? 100 * r.median * flops_per_image / peak : 0.0);
    std::cout << "\n" << std::flush;
  };
  // Which of biaslab's fused kernels the timed calls ran (runtime.kernels picks them by
  // layer, precision and CPU).
  auto kernels = [&](const std::string& what) {
    const std::vector<std::string> ran = kernel_log::ran();
    out[what]["kernels"] = ran;
    if (a.json) return;
    std::cout << fmt::format("  {:<6} kernels ({}): {}\n", what, cfg.runtime.kernels,
                             ran.empty() ? std::string("LibTorch operators only") : fmt::format("{}", fmt::join(ran, ", ")));
  };
  if (only.count("train")) {
    kernel_log::clear();
    const Rate r = bench_training(cfg, device, s);
    out["train"] = compute_json(r, 3 * fwd_flops, peak);
    out["train"]["step_ms"] = 1e3 * double(cfg.train.batch_size) / std::max(r.median, 1e-9);
    line("train", cfg.train.batch_size, r, 3 * fwd_flops);
    kernels("train");
    if (!s.trace.empty()) {
      out["train"]["trace"] = s.trace;
      if (!a.json) std::cout << "  trace of " << s.steps << " training steps: " << s.trace << "\n";
    }
  }
  if (only.count("infer")) {
    kernel_log::clear();
    const Rate r = bench_inference(cfg, device, s);
    out["infer"] = compute_json(r, fwd_flops, peak);
    line("infer", cfg.train.eval_batch_size, r, fwd_flops);
    kernels("infer");
  }
  if (only.count("loader")) {
    json loader = json::array();
    for (const auto& l : bench_loader(cfg, *data, s)) {
      loader.push_back({{"variant", l.variant}, {"images_per_s", l.rate.median}, {"min", l.rate.min},
                        {"max", l.rate.max}});
      if (!a.json)
        std::cout << fmt::format("  loader batch {:<5} {:>9.0f} images/s ({:.0f} - {:.0f})  {}\n",
                                 cfg.train.batch_size, l.rate.median, l.rate.min, l.rate.max, l.variant);
    }
    out["loader"] = loader;
  }
  if (a.json) {
    std::cout << out.dump(2) << "\n";
  } else if (peak > 0) {
    std::cout << fmt::format("  peak ({}, fastest dense kernel: {}): {:.1f} GFLOP/s\n", cfg.train.precision,
                             out["peak"]["kernel"].get<std::string>(), peak / 1e9);
    std::cout << "  MFU = model FLOP/s / peak; training counts 3x the forward FLOPs\n";
  }
}

}  // namespace

void register_bench(CLI::App& app) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Training, inference and loader throughput of the configured model, and its FLOPs utilisation");
  cmd->add_option("-c,--config", args->config, "experiment YAML (configs/*.yaml)")->required();
  cmd->add_option("--set", args->sets, "override a config value, e.g. --set train.precision=fp32 (repeatable)");
  cmd->add_option("--only", args->only, "what to measure: train, infer, loader (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember({"train", "infer", "loader"}))
      ->capture_default_str();
  cmd->add_option("--steps", args->settings.steps, "steps (batches) per timed repetition")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--warmup", args->settings.warmup, "untimed steps first")
      ->check(at_least(0))
      ->capture_default_str();
  cmd->add_option("--repeats", args->settings.repeats, "timed repetitions (median, min, max over them)")
      ->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--trace", args->settings.trace,
                  "also record one repetition of training steps with the operator profiler, as a Chrome trace "
                  "(chrome://tracing, ui.perfetto.dev) written to this file");
  cmd->add_flag("--json", args->json, "print one JSON object instead of the table");
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace biaslab::cli
