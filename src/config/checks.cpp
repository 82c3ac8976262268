#include "config/checks.h"

#include <algorithm>

#include "config/checker.h"
#include "config/field_table.h"
#include "config/loader.h"
#include "config/suggest.h"
#include "core/errors.h"
#include "core/input_file.h"
#include "data/synthetic.h"
#include "models/model_checks.h"

namespace biaslab::config_detail {
namespace fs = std::filesystem;

namespace {

class Checker : public ConfigChecker {
 public:
  Checker(const Flat& merged) : merged_(merged) {}
  std::string where(const std::string& key) const override { return where_or_default(merged_, key); }

 private:
  const Flat& merged_;
};

// The name is a folder under runs/ (and a sweep's runs/): one plain path component.
void check_name(const std::string& name, const Checker& k) {
  k.require(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
                name.find('\\') == std::string::npos && text_problem(name).empty(),
            "name",
            "'" + (text_problem(name).empty() ? name : "(" + text_problem(name) + ")") +
                "' is not a run name: expected a non-empty folder name without '/' and other than '.' and '..' "
                "(runs are written to runs/<name>; --out chooses any folder)");
}

// The keys without a default: model.family and data's image geometry (usually from presets).
void check_required(const Config& c, const Flat& merged, const fs::path& home) {
  auto preset_hint = [&](const std::string& kind) {
    auto names = list_presets(kind, home);
    return names.empty() ? std::string() : " (presets: " + join(names) + ")";
  };
  if (c.model.family.empty())
    throw ConfigError("model.family: missing; set model.preset" + preset_hint("models") +
                      " or model.family (resnet|vit|hybrid)");
  for (const char* key : {"image_size", "channels", "num_classes"}) {
    const std::string full = std::string("data.") + key;
    if (!merged.count(full))
      throw ConfigError(full + ": missing; set data.preset" + preset_hint("data") + " or " + full);
  }
}

void check_data(const DataConfig& d, const Flat& merged, const Checker& k) {
  auto have = [&](const std::string& full) { return merged.count(full) && !merged.at(full).node.Scalar().empty(); };
  if (d.format == "idx") {
    for (const char* key : {"root", "train_images", "train_labels", "test_images", "test_labels"})
      if (!have(std::string("data.") + key))
        throw ConfigError(std::string("data.") + key + ": missing; the idx format needs data.root and the four file names");
  } else if (d.format == "synthetic") {
    k.require(!d.task.empty(), "data.task", "missing; the synthetic format needs a task: texture | same_different");
    const int64_t classes = synthetic_classes(d.task);
    k.require(d.image_size >= kMinSyntheticSize, "data.image_size",
              "synthetic tasks need images of at least " + std::to_string(kMinSyntheticSize) + " px, got " +
                  std::to_string(d.image_size));
    k.require(d.num_classes == classes, "data.num_classes",
              "the synthetic task '" + d.task + "' has " + std::to_string(classes) + " classes, got " +
                  std::to_string(d.num_classes));
  } else if (!have("data.root")) {
    throw ConfigError("data.root: missing; the " + d.format + " format reads its files from a folder");
  }
  for (const auto& key : other_format_keys(d))
    k.require(!merged.count(key), key,
              "does not apply to data.format '" + d.format + "' (" + k.where("data.format") + ")");
  k.require(d.format != "folder" || d.channels == 1 || d.channels == 3, "data.channels",
            "image folders are read as greyscale (1) or RGB (3), got " + std::to_string(d.channels));
  k.require(d.mean.empty() || d.mean.size() == static_cast<size_t>(d.channels), "data.mean",
            "expected " + std::to_string(d.channels) + " values (one per channel, data.channels) or [] (computed "
            "from the training subset), got " + std::to_string(d.mean.size()));
  k.require(d.std.size() == d.mean.size(), "data.std",
            "expected as many values as data.mean (" + std::to_string(d.mean.size()) + "), got " +
                std::to_string(d.std.size()));
  k.require(d.crop_padding <= d.image_size, "data.crop_padding",
            "expected at most data.image_size = " + std::to_string(d.image_size) + " pixels of padding, got " +
                std::to_string(d.crop_padding));
  k.require(d.random_resized_crop.empty() ||
                (d.random_resized_crop.size() == 2 && d.random_resized_crop[0] > 0 &&
                 d.random_resized_crop[0] <= d.random_resized_crop[1] && d.random_resized_crop[1] <= 1.0),
            "data.random_resized_crop", "expected [] (off) or [min, max] area shares with 0 < min <= max <= 1");
  k.require(d.class_names.empty() || d.class_names.size() == static_cast<size_t>(d.num_classes),
            "data.class_names",
            "expected " + std::to_string(d.num_classes) + " names (data.num_classes), got " +
                std::to_string(d.class_names.size()));
}

// The model keys: those of the tokenizer a hybrid does not use, then its family's rules.
void check_model(const ModelConfig& m, const DataConfig& d, const Flat& merged, const Checker& k) {
  for (const auto& key : other_tokenizer_keys(m))
    k.require(!merged.count(key), key,
              "applies to the " + std::string(m.tokenizer == "conv" ? "resnet" : "conv") +
                  " tokenizer, but model.tokenizer is '" + m.tokenizer + "' (" + k.where("model.tokenizer") + ")" +
                  (m.tokenizer == "conv" ? "; the conv tokenizer has one conv-ReLU-maxpool layer per entry of model.widths"
                                         : ""));
  check_model_config(m, d, k);
}

void check_training(const Config& c, const Checker& k) {
  const ModelConfig& m = c.model;
  const DataConfig& d = c.data;
  k.require(!m.init_from.empty() || m.init_skip.empty(), "model.init_skip", "needs model.init_from");
  k.require(std::find(m.init_skip.begin(), m.init_skip.end(), "") == m.init_skip.end(), "model.init_skip",
            "an empty prefix would skip every key");
  k.require(d.train_fraction == 1.0 || d.train_per_class == 0, "data.train_per_class",
            "set either data.train_fraction or data.train_per_class, not both");
  k.require(d.val_fraction == 0.0 || d.val_per_class == 0, "data.val_per_class",
            "set either data.val_fraction or data.val_per_class, not both");
  k.require(c.train.early_stop_patience == 0 || d.has_val_split(), "train.early_stop_patience",
            "early stopping needs a validation split: set data.val_fraction > 0 or data.val_per_class > 0 (stopping "
            "on the test set would leak it into model selection)");
  k.require(c.train.eval_test == "every" || d.has_val_split(), "train.eval_test",
            "'final' evaluates the test set only at the end, so the validation split must choose the best epoch: "
            "set data.val_fraction > 0 or data.val_per_class > 0");
  k.require(c.optim.betas.size() == 2 && c.optim.betas[0] < 1.0 && c.optim.betas[1] < 1.0,
            "optim.betas", "expected two numbers in [0, 1)");
  const std::string& dev = c.runtime.device;
  const bool device_ok = dev == "auto" || dev == "cpu" || dev == "cuda" ||
                         (dev.rfind("cuda:", 0) == 0 && dev.size() > 5 &&
                          dev.find_first_not_of("0123456789", 5) == std::string::npos);
  k.require(device_ok, "runtime.device", "'" + dev + "' is not a device; expected auto, cpu, cuda or cuda:N");
}

}  // namespace

void check(const Config& c, const Flat& merged, const fs::path& home) {
  const Checker k(merged);
  check_name(c.name, k);
  check_required(c, merged, home);
  check_data(c.data, merged, k);
  check_model(c.model, c.data, merged, k);
  check_training(c, k);
}

}  // namespace biaslab::config_detail
