#include "config/field_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>

#include "config/loader.h"
#include "config/suggest.h"
#include "config/yaml_io.h"
#include "core/errors.h"
#include "core/input_file.h"

namespace biaslab {
namespace config_detail {
namespace {

constexpr int64_t kMaxWorkers = 256;  // data.workers: loader threads

// ---------------------------------------------------------------------------------
// Field table: one typed binding per key, used for reading, checking and writing.

struct Field {
  std::string key;     // dotted
  std::vector<std::string> families;  // model keys only: empty = every family
  bool applies_to(const std::string& family) const {
    return families.empty() || std::find(families.begin(), families.end(), family) != families.end();
  }
  std::function<void(const Entry&)> read;
  std::function<void(YAML::Emitter&)> emit;
  /// false for keys that say where and how a run executes rather than what it computes
  /// (threads, device, data location, logging): left out of its experiment identity.
  bool identity = true;
};

// Every string of a config ends up in JSON and YAML files (meta.json, summary.json,
// config.yaml): valid UTF-8 without control characters, checked when read.
void check_text(const Entry& e, const std::string& key, const std::string& value) {
  const std::string problem = text_problem(value);
  if (!problem.empty()) fail(e, key, "expected printable UTF-8 text, got " + problem);
}

std::string format_double(double v) {
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep it a float in YAML
  return s;
}

class FieldTable {
 public:
  std::vector<Field> fields;
  std::vector<std::string> family_scope;  // set while declaring model keys of some families
  bool execution_scope = false;           // set while declaring keys outside the identity

  void integer(const std::string& key, int64_t& ref, int64_t min, bool nullable = false,
               int64_t max = std::numeric_limits<int64_t>::max()) {
    add(key,
        [&ref, key, min, nullable, max](const Entry& e) {
          if (nullable && e.node.IsNull()) {
            ref = 0;
            return;
          }
          int64_t v = 0;
          if (!e.node.IsScalar() || !YAML::convert<int64_t>::decode(e.node, v))
            fail(e, key, "expected an integer" + std::string(nullable ? " or ~" : "") + ", got '" +
                             show(e.node) + "'");
          if (v < min)
            fail(e, key, "expected an integer >= " + std::to_string(min) + std::string(nullable ? " or ~ (none)" : "") +
                             ", got " + std::to_string(v));
          if (v > max) fail(e, key, "expected an integer <= " + std::to_string(max) + ", got " + std::to_string(v));
          ref = v;
        },
        [&ref, nullable](YAML::Emitter& out) {
          if (nullable && ref == 0) out << YAML::Null;
          else out << ref;
        });
  }

  void number(const std::string& key, double& ref, double min, double max, bool min_open = false) {
    add(key,
        [&ref, key, min, max, min_open](const Entry& e) {
          double v = 0;
          if (!e.node.IsScalar() || !YAML::convert<double>::decode(e.node, v) || !std::isfinite(v))
            fail(e, key, "expected a number, got '" + show(e.node) + "'");
          if (v < min || v > max || (min_open && v == min))
            fail(e, key, "expected a number in " + std::string(min_open ? "(" : "[") + format_double(min) +
                             ", " + format_double(max) + "], got " + show(e.node));
          ref = v;
        },
        [&ref](YAML::Emitter& out) { out << format_double(ref); });
  }

  void boolean(const std::string& key, bool& ref) {
    add(key,
        [&ref, key](const Entry& e) {
          bool v = false;
          if (!e.node.IsScalar() || !YAML::convert<bool>::decode(e.node, v))
            fail(e, key, "expected true or false, got '" + show(e.node) + "'");
          ref = v;
        },
        [&ref](YAML::Emitter& out) { out << ref; });
  }

  void text(const std::string& key, std::string& ref) {
    add(key,
        [&ref, key](const Entry& e) {
          if (!e.node.IsScalar()) fail(e, key, "expected a string, got '" + show(e.node) + "'");
          check_text(e, key, e.node.Scalar());
          ref = e.node.Scalar();
        },
        [&ref](YAML::Emitter& out) { out << ref; });
  }

  void choice(const std::string& key, std::string& ref, std::vector<std::string> choices) {
    add(key,
        [&ref, key, choices](const Entry& e) {
          if (!e.node.IsScalar()) fail(e, key, "expected one of " + join(choices, "|") + ", got '" + show(e.node) + "'");
          const std::string v = e.node.Scalar();
          if (std::find(choices.begin(), choices.end(), v) == choices.end())
            fail(e, key, "'" + v + "' is not a valid choice" + did_you_mean(v, choices) +
                             "; expected one of: " + join(choices));
          ref = v;
        },
        [&ref](YAML::Emitter& out) { out << ref; });
  }

  template <typename T>
  void list(const std::string& key, std::vector<T>& ref, const std::string& what, double min) {
    add(key,
        [&ref, key, what, min](const Entry& e) {
          if (!e.node.IsSequence()) fail(e, key, "expected a list of " + what + ", got '" + show(e.node) + "'");
          std::vector<T> values;
          for (const auto& item : e.node) {
            T v{};
            if (!item.IsScalar() || !YAML::convert<T>::decode(item, v))
              fail(e, key, "expected a list of " + what + ", got element '" + show(item) + "'");
            if constexpr (std::is_arithmetic_v<T>) {
              if (!std::isfinite(static_cast<double>(v)))
                fail(e, key, "expected finite " + what + ", got '" + show(item) + "'");
              if (static_cast<double>(v) < min)
                fail(e, key, "expected " + what + " >= " + format_double(min) + ", got '" + show(item) + "'");
            } else {
              check_text(e, key, v);
            }
            values.push_back(v);
          }
          ref = values;
        },
        [&ref](YAML::Emitter& out) {
          out << YAML::Flow << YAML::BeginSeq;
          for (const auto& v : ref) {
            if constexpr (std::is_floating_point_v<T>) out << format_double(v);
            else out << v;
          }
          out << YAML::EndSeq;
        });
  }

  // runtime.threads: "auto" or a positive integer (0 internally means auto).
  void threads(const std::string& key, int64_t& ref) {
    add(key,
        [&ref, key](const Entry& e) {
          int64_t v = 0;
          if (e.node.IsScalar() && e.node.Scalar() == "auto") {
            ref = 0;
          } else if (e.node.IsScalar() && YAML::convert<int64_t>::decode(e.node, v) && v >= 1) {
            ref = v;
          } else {
            fail(e, key, "expected 'auto' or a positive integer, got '" + show(e.node) + "'");
          }
        },
        [&ref](YAML::Emitter& out) {
          if (ref == 0) out << "auto";
          else out << ref;
        });
  }

  /// The field for `key`, preferring the one of `family` when families share a key.
  const Field* find(const std::string& key, const std::string& family = "") const {
    const Field* any = nullptr;
    for (const auto& f : fields) {
      if (f.key != key) continue;
      if (f.applies_to(family)) return &f;
      if (!any) any = &f;
    }
    return any;
  }

 private:
  void add(const std::string& key, std::function<void(const Entry&)> read,
           std::function<void(YAML::Emitter&)> emit) {
    fields.push_back(Field{key, family_scope, std::move(read), std::move(emit), !execution_scope});
  }
};

void add_model_fields(FieldTable& t, ModelConfig& m) {
  t.text("model.preset", m.preset);
  t.choice("model.family", m.family, {"resnet", "vit", "hybrid"});
  t.boolean("model.residual", m.residual);
  t.family_scope = {"resnet"};
  t.choice("model.norm", m.norm, {"batchnorm", "groupnorm", "layernorm", "none"});
  t.family_scope = {"resnet", "hybrid"};
  t.choice("model.stem", m.stem, {"cifar", "imagenet"});
  t.choice("model.block", m.block, {"basic", "bottleneck"});
  t.list("model.layers", m.layers, "integers", 1);
  t.list("model.widths", m.widths, "integers", 1);
  t.boolean("model.zero_init_residual", m.zero_init_residual);
  t.family_scope = {"hybrid"};
  t.choice("model.tokenizer", m.tokenizer, {"resnet", "conv"});
  t.choice("model.cnn_norm", m.cnn_norm, {"batchnorm", "groupnorm", "layernorm", "none"});
  t.integer("model.tokenizer_kernel", m.tokenizer_kernel, 1);
  t.family_scope = {"vit", "hybrid"};
  t.choice("model.norm", m.norm, {"layernorm", "batchnorm", "rmsnorm", "none"});
  t.choice("model.norm_placement", m.norm_placement, {"pre", "post"});
  t.integer("model.patch_size", m.patch_size, 1);
  t.integer("model.embed_dim", m.embed_dim, 1);
  t.integer("model.depth", m.depth, 1);
  t.integer("model.num_heads", m.num_heads, 1);
  t.number("model.mlp_ratio", m.mlp_ratio, 0.0, 64.0, true);
  t.boolean("model.qkv_bias", m.qkv_bias);
  t.number("model.drop_rate", m.drop_rate, 0.0, 1.0);
  t.number("model.attn_drop_rate", m.attn_drop_rate, 0.0, 1.0);
  t.choice("model.pool", m.pool, {"cls", "gap", "seq"});
  t.choice("model.pos_embed", m.pos_embed, {"learned", "sincos2d", "none", "relative"});
  t.number("model.drop_path_rate", m.drop_path_rate, 0.0, 0.99);
  t.number("model.layer_scale_init", m.layer_scale_init, 0.0, 10.0);
  t.integer("model.attn_window", m.attn_window, 0);
  t.integer("model.gpsa_layers", m.gpsa_layers, 0);
  t.number("model.locality_strength", m.locality_strength, 0.0, 100.0);
  t.choice("model.attn_scale", m.attn_scale, {"sqrt_dk", "none"});
  t.number("model.attn_temperature", m.attn_temperature, 0.0, 1000.0, true);
  t.boolean("model.rezero", m.rezero);
  t.choice("model.residual_stream", m.residual_stream, {"fp32", "autocast"});
  t.family_scope = {};
  t.text("model.init_from", m.init_from);
  t.list("model.init_skip", m.init_skip, "key prefixes", 0.0);
}

void add_data_fields(FieldTable& t, DataConfig& d) {
  t.text("data.preset", d.preset);
  t.choice("data.format", d.format, {"idx", "cifar10", "cifar100", "folder", "synthetic"});
  t.execution_scope = true;  // the data's location: moved data is the same experiment
  t.text("data.root", d.root);
  t.execution_scope = false;
  t.text("data.train_images", d.train_images);
  t.text("data.train_labels", d.train_labels);
  t.text("data.test_images", d.test_images);
  t.text("data.test_labels", d.test_labels);
  t.list("data.train_files", d.train_files, "file names", 0.0);
  t.list("data.test_files", d.test_files, "file names", 0.0);
  t.choice("data.label_kind", d.label_kind, {"fine", "coarse"});
  t.choice("data.on_bad_image", d.on_bad_image, {"error", "skip"});
  t.number("data.test_holdout", d.test_holdout, 0.0, 0.9, true);
  t.choice("data.task", d.task, {"texture", "same_different"});
  t.integer("data.train_size", d.train_size, 1);
  t.integer("data.test_size", d.test_size, 1);
  t.integer("data.generator_seed", d.generator_seed, 0);
  t.integer("data.image_size", d.image_size, 1);
  t.integer("data.channels", d.channels, 1);
  t.integer("data.num_classes", d.num_classes, 2);
  t.list("data.mean", d.mean, "numbers", 0.0);
  t.list("data.std", d.std, "positive numbers", 1e-12);
  t.list("data.class_names", d.class_names, "strings", 0.0);
  t.number("data.train_fraction", d.train_fraction, 0.0, 1.0, true);
  t.integer("data.train_per_class", d.train_per_class, 0, true);
  t.integer("data.subset_seed", d.subset_seed, 0);
  t.number("data.val_fraction", d.val_fraction, 0.0, 0.9);
  t.integer("data.val_per_class", d.val_per_class, 0);
  t.number("data.test_fraction", d.test_fraction, 0.0, 1.0, true);
  t.list("data.random_resized_crop", d.random_resized_crop, "numbers", 0.0);
  t.integer("data.crop_padding", d.crop_padding, 0);
  t.boolean("data.hflip", d.hflip);
  t.boolean("data.trivial_augment", d.trivial_augment);
  t.number("data.random_erasing", d.random_erasing, 0.0, 1.0);
  t.number("data.mixup_alpha", d.mixup_alpha, 0.0, 100.0);
  t.number("data.cutmix_alpha", d.cutmix_alpha, 0.0, 100.0);
  t.execution_scope = true;
  t.integer("data.workers", d.workers, 0, false, kMaxWorkers);
  t.execution_scope = false;
}

void add_optim_fields(FieldTable& t, OptimConfig& o) {
  t.choice("optim.name", o.name, {"sgd", "adamw"});
  t.number("optim.lr", o.lr, 0.0, 1e3, true);
  t.number("optim.weight_decay", o.weight_decay, 0.0, 10.0);
  t.number("optim.momentum", o.momentum, 0.0, 1.0);
  t.boolean("optim.nesterov", o.nesterov);
  t.list("optim.betas", o.betas, "numbers", 0.0);
  t.number("optim.eps", o.eps, 0.0, 1.0, true);
}

void add_sched_fields(FieldTable& t, SchedConfig& s) {
  t.choice("sched.name", s.name, {"cosine", "constant"});
  t.integer("sched.warmup_steps", s.warmup_steps, 0);
  t.number("sched.min_lr", s.min_lr, 0.0, 1e3);
}

void add_train_fields(FieldTable& t, TrainConfig& tr) {
  t.integer("train.epochs", tr.epochs, 1);
  t.integer("train.steps", tr.steps, 1, true);
  t.integer("train.batch_size", tr.batch_size, 1);
  t.integer("train.eval_batch_size", tr.eval_batch_size, 1);
  t.integer("train.eval_every", tr.eval_every, 1);
  t.choice("train.eval_test", tr.eval_test, {"every", "final"});
  t.integer("train.train_eval_size", tr.train_eval_size, 0);
  t.choice("train.precision", tr.precision, {"auto", "fp32", "bf16", "fp16"});
  t.integer("train.checkpoint_every", tr.checkpoint_every, 0);
  t.integer("train.save_top_k", tr.save_top_k, 0);
  t.choice("train.nonfinite", tr.nonfinite, {"abort", "skip"});
  t.integer("train.max_consecutive_skips", tr.max_consecutive_skips, 1);
  t.number("train.ema_decay", tr.ema_decay, 0.0, 0.999999);
  t.integer("train.early_stop_patience", tr.early_stop_patience, 0);
  t.integer("train.early_stop_min_steps", tr.early_stop_min_steps, 0);
  t.number("train.label_smoothing", tr.label_smoothing, 0.0, 1.0);
  t.number("train.grad_clip", tr.grad_clip, 0.0, 1e6);
  t.execution_scope = true;  // logging
  t.integer("train.log_every", tr.log_every, 1);
  t.boolean("train.tensorboard", tr.tensorboard);
  t.execution_scope = false;
}

void add_runtime_fields(FieldTable& t, RuntimeConfig& r) {
  t.integer("runtime.seed", r.seed, 0);
  // Where and how it runs (these void the bitwise guarantee, not the experiment:
  // docs/reliability.md, "Training state").
  t.execution_scope = true;
  t.threads("runtime.threads", r.threads);
  t.text("runtime.device", r.device);
  t.choice("runtime.memory_format", r.memory_format, {"auto", "channels_last", "contiguous"});
  t.choice("runtime.kernels", r.kernels, {"auto", "fused", "reference"});
  t.choice("runtime.dist_backend", r.dist_backend, {"auto", "gloo", "nccl"});
  t.integer("runtime.dist_timeout_s", r.dist_timeout_s, 1);
  t.number("runtime.max_memory_gb", r.max_memory_gb, 0.0, 1e9);
  t.execution_scope = false;
}

FieldTable make_table(Config& c) {
  FieldTable t;
  t.text("name", c.name);

  add_model_fields(t, c.model);
  add_data_fields(t, c.data);
  add_optim_fields(t, c.optim);
  add_sched_fields(t, c.sched);
  add_train_fields(t, c.train);
  add_runtime_fields(t, c.runtime);
  return t;
}

std::vector<std::string> keys_in_section(const FieldTable& t, const std::string& section) {
  std::vector<std::string> out;
  for (const auto& f : t.fields)
    if (f.key.rfind(section + ".", 0) == 0) out.push_back(f.key.substr(section.size() + 1));
  return out;
}

}  // namespace

// A hybrid's keys that belong to the tokenizer it does not use: an error when set,
// left out of the resolved YAML.
std::vector<std::string> other_tokenizer_keys(const ModelConfig& m) {
  if (m.family != "hybrid") return {};
  if (m.tokenizer == "conv")
    return {"model.layers", "model.block", "model.stem", "model.zero_init_residual", "model.cnn_norm"};
  return {"model.tokenizer_kernel"};
}

// The data keys of the formats `d.format` is not, likewise.
std::vector<std::string> other_format_keys(const DataConfig& d) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> by_format = {
      {"idx", {"train_images", "train_labels", "test_images", "test_labels"}},
      {"cifar", {"train_files", "test_files"}},
      {"cifar100", {"label_kind"}},
      {"folder", {"on_bad_image", "test_holdout"}},
      {"synthetic", {"task", "train_size", "test_size", "generator_seed"}},
      {"files", {"root"}},
  };
  const bool cifar = d.format == "cifar10" || d.format == "cifar100";
  std::vector<std::string> out;
  for (const auto& [group, keys] : by_format) {
    const bool relevant = group == d.format || (group == "cifar" && cifar) || (group == "files" && d.format != "synthetic");
    if (!relevant)
      for (const auto& k : keys) out.push_back("data." + k);
  }
  return out;
}

Config read_fields(const Flat& merged) {
  Config c;
  FieldTable table = make_table(c);

  // The family decides which model keys apply, so read it first.
  if (merged.count("model.family")) table.find("model.family")->read(merged.at("model.family"));

  for (const auto& [key, entry] : merged) {
    const Field* f = table.find(key, c.model.family);
    if (!f) {
      const auto dot = key.find('.');
      const std::string section = key.substr(0, dot);
      const std::string rest = dot == std::string::npos ? key : key.substr(dot + 1);
      const auto candidates = keys_in_section(table, section);
      throw ConfigError(entry.where() + ": unknown key '" + key + "'" + did_you_mean(rest, candidates) +
                        "; keys of '" + section + "': " + join(candidates));
    }
    if (!f->applies_to(c.model.family)) {
      std::vector<std::string> own;
      for (const auto& g : table.fields)
        if (g.key.rfind("model.", 0) == 0 && !g.families.empty() && g.applies_to(c.model.family))
          own.push_back(g.key.substr(6));
      std::vector<std::string> quoted;
      for (const auto& fam : f->families) quoted.push_back("'" + fam + "'");
      throw ConfigError(entry.where() + ": " + key + " applies to family " + join(quoted, " or ") +
                        ", but model.family is '" + c.model.family + "' (" + where_or_default(merged, "model.family") +
                        "); keys of family '" + c.model.family + "': " + join(own));
    }
    f->read(entry);
  }
  return c;
}

}  // namespace config_detail

using namespace config_detail;

namespace {

std::string emit_yaml(const Config& config, bool identity_only) {
  Config copy = config;
  FieldTable table = make_table(copy);
  auto skip = other_tokenizer_keys(copy.model);
  for (const auto& key : other_format_keys(copy.data)) skip.push_back(key);
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value;
  table.find("name")->emit(out);
  for (const auto& section : kSections) {
    out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    for (const auto& f : table.fields) {
      if (f.key.rfind(section + ".", 0) != 0) continue;
      if (!f.applies_to(copy.model.family)) continue;
      if (std::find(skip.begin(), skip.end(), f.key) != skip.end()) continue;
      if (identity_only && !f.identity) continue;
      out << YAML::Key << f.key.substr(section.size() + 1) << YAML::Value;
      f.emit(out);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

std::string to_yaml(const Config& config) { return emit_yaml(config, false); }

std::string identity_yaml(const Config& config) { return emit_yaml(config, true); }

std::vector<std::string> execution_keys() {
  Config c;
  FieldTable table = make_table(c);
  std::vector<std::string> keys;
  for (const auto& f : table.fields)
    if (!f.identity) keys.push_back(f.key);
  return keys;
}

std::vector<std::pair<std::string, std::string>> config_values(const Config& config) {
  const YAML::Node root = YAML::Load(to_yaml(config));
  std::vector<std::pair<std::string, std::string>> out = {{"name", config.name}};
  for (const auto& section : kSections)
    for (const auto& kv : root[section])
      out.emplace_back(section + "." + kv.first.as<std::string>(), yaml_value_text(kv.second, ""));
  return out;
}

std::string data_preset_yaml(const Config& config, const std::vector<std::string>& keys) {
  Config copy = config;
  FieldTable table = make_table(copy);
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& key : keys) {
    const Field* f = table.find("data." + key);
    if (!f) throw Error("data_preset_yaml: unknown key data." + key);
    out << YAML::Key << key << YAML::Value;
    f->emit(out);
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace biaslab
