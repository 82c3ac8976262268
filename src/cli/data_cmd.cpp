// biaslab data export -c CONFIG --out DIR [--set k=v]... [--force]: writes the configured
// dataset (any format, synthetic tasks included) as an image folder with a preset file.
// biaslab data bench -c CONFIG [--set k=v]... [--batches N] [--repeats R]: loader throughput.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/validators.h"
#include "config/loader.h"
#include "core/errors.h"
#include "core/fs.h"
#include "data/dataset.h"
#include "data/image_folder.h"
#include "data/loader.h"
#include "engine/bench.h"
#include "core/runtime.h"

#include <algorithm>
#include <chrono>

namespace biaslab::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kExportKind = "a biaslab data export";
constexpr const char* kPresetHeader = "# Written by biaslab data export";

// An export written before folders had manifests: its dataset.yaml, and PNGs in
// SPLIT/CLASS/ folders.
bool is_legacy_export(const fs::path& dir) {
  std::ifstream in(dir / "dataset.yaml");
  std::string first;
  if (!std::getline(in, first) || first.rfind(kPresetHeader, 0) != 0) return false;
  for (const auto& f : files_under(dir)) {
    const fs::path p(f);
    const std::string split = p.begin()->string();
    if (f != "dataset.yaml" && (std::distance(p.begin(), p.end()) != 3 || p.extension() != ".png" ||
                                (split != "train" && split != "test" && split != "val")))
      return false;
  }
  return true;
}

void export_dataset(const Config& cfg, const fs::path& out, bool force) {
  // A folder biaslab did not write is refused with or without --force; an earlier export
  // nobody added to needs --force to be replaced.
  require_replaceable_folder(out, "--out", kExportKind, is_legacy_export);
  if (fs::exists(out) && !force)
    throw ConfigError("--out " + out.string() + " already exists; pass --force to replace it");
  const Source src = read_source(cfg.data);
  std::vector<std::string> names = cfg.data.class_names.empty() ? src.class_names : cfg.data.class_names;
  if (names.empty()) names = index_class_names(cfg.data.num_classes);
  // Everything goes to a sibling folder first; the rename makes the export all or nothing.
  write_folder_atomically(out, [&](const fs::path& tmp) {
    write_image_folder((tmp / "train").string(), src.train, names);
    write_image_folder((tmp / "test").string(), src.test, names);
    if (src.val.size() > 0) write_image_folder((tmp / "val").string(), src.val, names);

    Config preset = cfg;
    preset.data.format = "folder";
    preset.data.root = fs::absolute(out).lexically_normal().string();
    preset.data.class_names = names;
    std::string yaml = std::string(kPresetHeader) + " from " +
                       (cfg.data.preset.empty() ? cfg.name : cfg.data.preset) + " (" + cfg.data.format +
                       "): use as data: {preset: " + (fs::absolute(out) / "dataset.yaml").string() + "}\n";
    yaml += data_preset_yaml(preset, {"format", "root", "image_size", "channels", "num_classes", "mean", "std",
                                      "class_names"});
    atomic_write(tmp / "dataset.yaml", yaml);
  }, "--out", kExportKind, is_legacy_export);
  std::cout << fmt::format("wrote {} train / {} test{} images of {} classes to {}\n", src.train.size(), src.test.size(),
                           src.val.size() > 0 ? fmt::format(" / {} val", src.val.size()) : "", names.size(),
                           out.string());
  std::cout << "preset: " << (out / "dataset.yaml").string() << "\n";
}

// Images per second of `batches` training batches, median and range over `repeats`.
void print_loader_bench(const Config& cfg, int64_t batches, int64_t repeats) {
  const int threads = set_threads(int(cfg.runtime.threads));
  BenchSettings s;
  s.steps = batches;
  s.warmup = batches;
  s.repeats = repeats;
  const auto rates = bench_loader(cfg, load_dataset(cfg.data), s);
  std::cout << fmt::format("loader throughput: batch {}, {} thread(s), {} batches x {} repeats\n",
                           cfg.train.batch_size, threads, batches, repeats);
  for (const auto& r : rates)
    std::cout << fmt::format("  {:<44} {:>10.0f} images/s (min {:.0f}, max {:.0f})\n", r.variant, r.rate.median,
                             r.rate.min, r.rate.max);
}

}  // namespace

void register_data(CLI::App& app) {
  CLI::App* data = app.add_subcommand("data", "Dataset tools");
  data->require_subcommand(1);
  struct Args {
    std::string config;
    std::vector<std::string> sets;
    std::string out;
    bool force = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* exp = data->add_subcommand(
      "export", "Write the configured dataset (any format, synthetic tasks too) as an image folder + dataset.yaml");
  exp->add_option("-c,--config", args->config, "experiment YAML whose data section to export")->required();
  exp->add_option("--set", args->sets, "override a config value, e.g. --set data.task=texture (repeatable)");
  exp->add_option("--out", args->out, "folder to create: OUT/train/<NN_class>/<index>.png, OUT/test/...")->required();
  exp->add_flag("--force", args->force, "replace an existing --out folder");
  exp->callback([args] { export_dataset(load_config(args->config, args->sets), args->out, args->force); });

  auto bargs = std::make_shared<Args>();
  auto counts = std::make_shared<std::pair<int64_t, int64_t>>(50, 5);
  CLI::App* bench = data->add_subcommand("bench", "Loader throughput (images/s) without and with the configured augmentation");
  bench->add_option("-c,--config", bargs->config, "experiment YAML")->required();
  bench->add_option("--set", bargs->sets, "override a config value (repeatable)");
  bench->add_option("--batches", counts->first, "batches per repetition")->check(at_least(1))->capture_default_str();
  bench->add_option("--repeats", counts->second, "timed repetitions (after one warm-up)")->check(at_least(1))->capture_default_str();
  bench->callback([bargs, counts] { print_loader_bench(load_config(bargs->config, bargs->sets), counts->first, counts->second); });
}

}  // namespace biaslab::cli
