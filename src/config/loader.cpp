// Config loading. The only translation unit that includes yaml-cpp.
//
// Every layer (preset file < experiment file < --set) is flattened into dotted keys,
// each value remembering where it came from (file:line or the --set text). Fields are
// then read from the merged map through one table of typed bindings, which is also
// what writes the resolved config back out, so reading and writing cannot drift.
#include "config/loader.h"

#include "config/yaml_io.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "config/suggest.h"
#include "core/build_info.h"
#include "core/errors.h"
#include "core/fs.h"
#include "core/input_file.h"
#include "data/synthetic.h"

namespace biaslab {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kSections = {"model", "data", "optim", "sched", "train", "runtime"};
constexpr int64_t kMaxWorkers = 256;  // data.workers: loader threads

struct Entry {
  YAML::Node node;
  std::string file;  // file name, or the --set text
  int line = -1;     // 1-based; -1 for --set
  std::string where() const { return line > 0 ? file + ":" + std::to_string(line) : file; }
};
using Flat = std::map<std::string, Entry>;

std::string show(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsNull()) return "null";
  YAML::Emitter e;
  e << YAML::Flow << node;
  return e.c_str();
}

[[noreturn]] void fail(const Entry& e, const std::string& key, const std::string& message) {
  throw ConfigError(e.where() + ": " + key + ": " + message);
}

// Flattens nested mappings into dotted keys; sequences and scalars are leaves.
void flatten(const YAML::Node& node, const std::string& prefix, const std::string& file,
             Flat& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    Entry e{it->second, file, it->first.Mark().line + 1};
    if (out.count(key) && out.at(key).file == file)
      throw ConfigError(e.where() + ": duplicate key '" + key + "' (first at " + out.at(key).where() + ")");
    if (it->second.IsMap()) {
      flatten(it->second, key, file, out);
    } else {
      out[key] = e;
    }
  }
}

// Counts the values of `node` as a reader sees them (an alias counts as often as it is
// used), stopping at the limit: a few lines of nested aliases can stand for billions.
void count_values(const YAML::Node& node, size_t& left, const std::string& file) {
  if (left == 0)
    throw ConfigError(file + ": the YAML expands to more than " + std::to_string(kMaxYamlValues) +
                      " values (nested aliases?); config and sweep files are limited to that");
  --left;
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      count_values(it->first, left, file);
      count_values(it->second, left, file);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) count_values(item, left, file);
  }
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::ParserException& ex) {
    throw ConfigError(file + ":" + std::to_string(ex.mark.line + 1) + ": YAML syntax error: " +
                      ex.msg);
  } catch (const YAML::Exception& ex) {
    throw ConfigError(file + ": unreadable YAML: " + ex.msg);
  }
  size_t left = kMaxYamlValues;
  count_values(node, left, file);
  return node;
}

std::string read_config_text(const fs::path& path, const std::string& what) {
  try {
    return read_input_file(path, kMaxConfigFileBytes, what);
  } catch (const Error& e) {
    throw ConfigError(what + ": " + e.what());
  }
}

YAML::Node read_yaml_file(const fs::path& path, const std::string& what) {
  return parse_yaml(read_config_text(path, what), path.string());
}

namespace {

std::string read_text(const fs::path& path, const std::string& what) { return read_config_text(path, what); }

// The experiment document: top-level keys are `name` and the sections, each a mapping.
void flatten_document(const YAML::Node& doc, const std::string& file, Flat& out) {
  if (!doc || doc.IsNull()) return;
  if (!doc.IsMap()) throw ConfigError(file + ": expected a mapping of sections (model, data, ...) at the top level");
  std::vector<std::string> top = kSections;
  top.push_back("name");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string key = it->first.Scalar();
    const int line = it->first.Mark().line + 1;
    if (std::find(top.begin(), top.end(), key) == top.end())
      throw ConfigError(file + ":" + std::to_string(line) + ": unknown top-level key '" + key +
                        "'" + did_you_mean(key, top) + "; expected one of: " + join(top));
    const bool seen = key == "name" ? out.count(key) > 0
                                    : std::any_of(out.begin(), out.end(), [&](const auto& kv) {
                                        return kv.first.rfind(key + ".", 0) == 0;
                                      });
    if (seen)
      throw ConfigError(file + ":" + std::to_string(line) + ": duplicate section '" + key +
                        "': merge its keys into the first one");
    if (key == "name") {
      out[key] = Entry{it->second, file, line};
    } else if (it->second.IsNull()) {
      continue;  // an empty section keeps its defaults
    } else if (!it->second.IsMap()) {
      throw ConfigError(file + ":" + std::to_string(line) + ": " + key +
                        ": expected a mapping of keys, got '" + show(it->second) + "'");
    } else {
      flatten(it->second, key, file, out);
    }
  }
}

// A preset file is a flat mapping of one section's keys (no section wrapper).
void merge_preset(const fs::path& path, const std::string& section, Flat& merged) {
  const std::string file = path.string();
  YAML::Node doc = parse_yaml(read_text(path, "preset file"), file);
  if (!doc.IsMap()) throw ConfigError(file + ": expected a mapping of " + section + " keys");
  Flat preset;
  flatten(doc, section, file, preset);
  if (preset.count(section + ".preset"))
    throw ConfigError(preset.at(section + ".preset").where() + ": a preset file cannot name another preset");
  for (auto& [key, entry] : preset) merged.emplace(key, entry);  // lower precedence: keep existing
}

void apply_override(const std::string& text, Flat& out) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set '" + text + "': expected KEY=VALUE, e.g. --set model.depth=4");
  const std::string key = text.substr(0, eq);
  const std::string source = "--set " + text;
  YAML::Node value = parse_yaml(text.substr(eq + 1), source);
  const auto dot = key.find('.');
  const std::string section = key.substr(0, dot);
  if (key != "name" && std::find(kSections.begin(), kSections.end(), section) == kSections.end()) {
    std::vector<std::string> top = kSections;
    top.push_back("name");
    throw ConfigError(source + ": unknown section '" + section + "'" + did_you_mean(section, top) +
                      "; expected one of: " + join(top));
  }
  if (value.IsMap()) {
    Flat sub;
    flatten(value, key, source, sub);
    for (auto& [k, e] : sub) out[k] = Entry{e.node, source, -1};
  } else {
    out[key] = Entry{value, source, -1};
  }
}

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
    fields.push_back(Field{key, family_scope, std::move(read), std::move(emit)});
  }
};

FieldTable make_table(Config& c) {
  FieldTable t;
  t.text("name", c.name);

  ModelConfig& m = c.model;
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
  t.boolean("model.rezero", m.rezero);
  t.family_scope = {};
  t.text("model.init_from", m.init_from);
  t.list("model.init_skip", m.init_skip, "key prefixes", 0.0);

  DataConfig& d = c.data;
  t.text("data.preset", d.preset);
  t.choice("data.format", d.format, {"idx", "cifar10", "cifar100", "folder", "synthetic"});
  t.text("data.root", d.root);
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
  t.number("data.test_fraction", d.test_fraction, 0.0, 1.0, true);
  t.list("data.random_resized_crop", d.random_resized_crop, "numbers", 0.0);
  t.integer("data.crop_padding", d.crop_padding, 0);
  t.boolean("data.hflip", d.hflip);
  t.boolean("data.trivial_augment", d.trivial_augment);
  t.number("data.random_erasing", d.random_erasing, 0.0, 1.0);
  t.number("data.mixup_alpha", d.mixup_alpha, 0.0, 100.0);
  t.number("data.cutmix_alpha", d.cutmix_alpha, 0.0, 100.0);
  t.integer("data.workers", d.workers, 0, false, kMaxWorkers);

  OptimConfig& o = c.optim;
  t.choice("optim.name", o.name, {"sgd", "adamw"});
  t.number("optim.lr", o.lr, 0.0, 1e3, true);
  t.number("optim.weight_decay", o.weight_decay, 0.0, 10.0);
  t.number("optim.momentum", o.momentum, 0.0, 1.0);
  t.boolean("optim.nesterov", o.nesterov);
  t.list("optim.betas", o.betas, "numbers", 0.0);
  t.number("optim.eps", o.eps, 0.0, 1.0, true);

  SchedConfig& s = c.sched;
  t.choice("sched.name", s.name, {"cosine", "constant"});
  t.integer("sched.warmup_steps", s.warmup_steps, 0);
  t.number("sched.min_lr", s.min_lr, 0.0, 1e3);

  TrainConfig& tr = c.train;
  t.integer("train.epochs", tr.epochs, 1);
  t.integer("train.steps", tr.steps, 1, true);
  t.integer("train.batch_size", tr.batch_size, 1);
  t.integer("train.eval_batch_size", tr.eval_batch_size, 1);
  t.integer("train.eval_every", tr.eval_every, 1);
  t.choice("train.precision", tr.precision, {"auto", "fp32", "bf16", "fp16"});
  t.integer("train.checkpoint_every", tr.checkpoint_every, 0);
  t.integer("train.save_top_k", tr.save_top_k, 0);
  t.choice("train.nonfinite", tr.nonfinite, {"abort", "skip"});
  t.integer("train.max_consecutive_skips", tr.max_consecutive_skips, 1);
  t.number("train.ema_decay", tr.ema_decay, 0.0, 0.999999);
  t.integer("train.early_stop_patience", tr.early_stop_patience, 0);
  t.number("train.label_smoothing", tr.label_smoothing, 0.0, 1.0);
  t.number("train.grad_clip", tr.grad_clip, 0.0, 1e6);
  t.integer("train.log_every", tr.log_every, 1);

  RuntimeConfig& r = c.runtime;
  t.threads("runtime.threads", r.threads);
  t.integer("runtime.seed", r.seed, 0);
  t.text("runtime.device", r.device);
  t.choice("runtime.memory_format", r.memory_format, {"auto", "channels_last", "contiguous"});
  t.choice("runtime.dist_backend", r.dist_backend, {"auto", "gloo", "nccl"});
  t.integer("runtime.dist_timeout_s", r.dist_timeout_s, 1);
  t.number("runtime.max_memory_gb", r.max_memory_gb, 0.0, 1e9);
  return t;
}

std::vector<std::string> keys_in_section(const FieldTable& t, const std::string& section) {
  std::vector<std::string> out;
  for (const auto& f : t.fields)
    if (f.key.rfind(section + ".", 0) == 0) out.push_back(f.key.substr(section.size() + 1));
  return out;
}

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

// ---------------------------------------------------------------------------------
// Cross-field checks (after every key is read).

class Checker {
 public:
  Checker(const Flat& merged) : merged_(merged) {}

  std::string where(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw ConfigError(where(key) + ": " + key + ": " + message);
  }
  void require(bool ok, const std::string& key, const std::string& message) const {
    if (!ok) fail(key, message);
  }

 private:
  const Flat& merged_;
};

void check(const Config& c, const Flat& merged, const fs::path& home) {
  Checker k(merged);
  // The name is a folder under runs/ (and a sweep's runs/): one plain path component.
  const std::string& name = c.name;
  k.require(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
                name.find('\\') == std::string::npos && text_problem(name).empty(),
            "name",
            "'" + (text_problem(name).empty() ? name : "(" + text_problem(name) + ")") +
                "' is not a run name: expected a non-empty folder name without '/' and other than '.' and '..' "
                "(runs are written to runs/<name>; --out chooses any folder)");
  const ModelConfig& m = c.model;
  const DataConfig& d = c.data;

  auto preset_hint = [&](const std::string& kind) {
    auto names = list_presets(kind, home);
    return names.empty() ? std::string() : " (presets: " + join(names) + ")";
  };
  if (m.family.empty())
    throw ConfigError("model.family: missing; set model.preset" + preset_hint("models") +
                      " or model.family (resnet|vit|hybrid)");
  for (const char* key : {"image_size", "channels", "num_classes"}) {
    const std::string full = std::string("data.") + key;
    if (!merged.count(full))
      throw ConfigError(full + ": missing; set data.preset" + preset_hint("data") + " or " + full);
  }
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

  const bool resnet_trunk = m.family == "resnet" || (m.family == "hybrid" && m.tokenizer == "resnet");
  if (resnet_trunk) {
    k.require(!m.layers.empty(), "model.layers", "expected at least one stage");
    k.require(m.layers.size() == m.widths.size(), "model.widths",
              "expected one width per stage: model.layers has " + std::to_string(m.layers.size()) +
                  " stages, model.widths has " + std::to_string(m.widths.size()) + " values");
  }
  if (m.family == "hybrid" && m.tokenizer == "conv") {
    k.require(!m.widths.empty(), "model.widths", "the conv tokenizer needs at least one layer (one width per layer)");
    k.require(m.tokenizer_kernel % 2 == 1, "model.tokenizer_kernel",
              "expected an odd kernel size (padding keeps the size), got " + std::to_string(m.tokenizer_kernel));
  }
  for (const auto& key : other_tokenizer_keys(m))
    k.require(!merged.count(key), key,
              "applies to the " + std::string(m.tokenizer == "conv" ? "resnet" : "conv") +
                  " tokenizer, but model.tokenizer is '" + m.tokenizer + "' (" + k.where("model.tokenizer") + ")" +
                  (m.tokenizer == "conv" ? "; the conv tokenizer has one conv-ReLU-maxpool layer per entry of model.widths"
                                         : ""));
  if (m.family == "vit" || m.family == "hybrid") {
    // Side of the map the patch projection sees: the image, or the CNN trunk's output.
    int64_t side = d.image_size;
    std::string from = "the image size " + std::to_string(d.image_size) + " (data.image_size, " +
                       k.where("data.image_size") + ")";
    if (m.family == "hybrid") {
      int64_t halvings = m.tokenizer == "conv" ? int64_t(m.widths.size())
                                               : int64_t(m.layers.size()) - 1 + (m.stem == "imagenet" ? 2 : 0);
      for (int64_t i = 0; i < halvings; ++i) side = (side + 1) / 2;
      from = "the " + std::to_string(side) + "x" + std::to_string(side) + " feature map the " + m.tokenizer +
             " tokenizer makes of " + std::to_string(d.image_size) + " px images";
    }
    k.require(side % m.patch_size == 0, "model.patch_size",
              "patch size " + std::to_string(m.patch_size) + " does not divide " + from + "; choose a divisor of " +
                  std::to_string(side) + (m.family == "vit" ? " or change data.image_size" : ""));
    k.require(m.pos_embed != "sincos2d" || m.embed_dim % 4 == 0, "model.pos_embed",
              "sincos2d needs embed_dim divisible by 4, got " + std::to_string(m.embed_dim));
    k.require(m.attn_window == 0 || m.attn_window % 2 == 1, "model.attn_window",
              "expected 0 (global attention) or an odd window size, got " + std::to_string(m.attn_window));
    k.require(m.embed_dim % m.num_heads == 0, "model.num_heads",
              "embed_dim " + std::to_string(m.embed_dim) + " (" + k.where("model.embed_dim") +
                  ") is not divisible by num_heads " + std::to_string(m.num_heads));
    k.require(m.gpsa_layers <= m.depth, "model.gpsa_layers",
              "expected at most model.depth = " + std::to_string(m.depth) + " GPSA blocks, got " +
                  std::to_string(m.gpsa_layers));
    k.require(m.gpsa_layers == 0 || (m.attn_window == 0 && m.pos_embed != "relative"), "model.gpsa_layers",
              "gated positional self-attention brings its own positional attention; it cannot be combined with "
              "model.attn_window or model.pos_embed: relative");
    k.require(!m.rezero || m.layer_scale_init == 0.0, "model.rezero",
              "choose one residual gain: ReZero (a scalar from 0) or LayerScale (model.layer_scale_init), not both");
  }

  k.require(!m.init_from.empty() || m.init_skip.empty(), "model.init_skip", "needs model.init_from");
  k.require(std::find(m.init_skip.begin(), m.init_skip.end(), "") == m.init_skip.end(), "model.init_skip",
            "an empty prefix would skip every key");
  k.require(d.train_fraction == 1.0 || d.train_per_class == 0, "data.train_per_class",
            "set either data.train_fraction or data.train_per_class, not both");
  k.require(c.train.early_stop_patience == 0 || d.val_fraction > 0.0, "train.early_stop_patience",
            "early stopping needs a validation split: set data.val_fraction > 0 (stopping on the test set would "
            "leak it into model selection)");
  k.require(c.optim.betas.size() == 2 && c.optim.betas[0] < 1.0 && c.optim.betas[1] < 1.0,
            "optim.betas", "expected two numbers in [0, 1)");
  const std::string& dev = c.runtime.device;
  const bool device_ok = dev == "auto" || dev == "cpu" || dev == "cuda" ||
                         (dev.rfind("cuda:", 0) == 0 && dev.size() > 5 &&
                          dev.find_first_not_of("0123456789", 5) == std::string::npos);
  k.require(device_ok, "runtime.device", "'" + dev + "' is not a device; expected auto, cpu, cuda or cuda:N");
}

std::string where_or_default(const Flat& merged, const std::string& key) {
  auto it = merged.find(key);
  return it == merged.end() ? "(default)" : it->second.where();
}

Config build(const Flat& merged, const fs::path& home, const std::string& default_name) {
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
  if (!merged.count("name")) c.name = default_name;  // an explicit empty name is checked (and refused) below
  if (c.model.norm.empty()) c.model.norm = c.model.family == "resnet" ? "batchnorm" : "layernorm";
  check(c, merged, home);
  return c;
}

}  // namespace

fs::path home_dir() {
  if (const char* env = std::getenv("BIASLAB_HOME"); env && *env) return fs::path(env);
  return fs::path(build::kHomeDir);
}

std::vector<std::string> list_presets(const std::string& kind, const fs::path& home) {
  const fs::path dir = (home.empty() ? home_dir() : home) / kind;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// Resolves `section.preset` (a name under home/<kind>/, or a path to a .yaml file).
void resolve_preset(const std::string& section, const std::string& kind, const fs::path& home,
                    const fs::path& config_dir, Flat& merged) {
  auto it = merged.find(section + ".preset");
  if (it == merged.end()) return;
  const Entry entry = it->second;
  const std::string key = section + ".preset";
  if (!entry.node.IsScalar()) fail(entry, key, "expected a preset name, got '" + show(entry.node) + "'");
  const std::string name = entry.node.Scalar();
  fs::path path;
  if (name.find('/') != std::string::npos || fs::path(name).extension() == ".yaml") {
    path = fs::path(name).is_absolute() ? fs::path(name) : config_dir / name;
    if (!fs::exists(path)) fail(entry, key, "preset file " + path.string() + " does not exist");
  } else {
    path = home / kind / (name + ".yaml");
    if (!fs::exists(path)) {
      const auto names = list_presets(kind, home);
      fail(entry, key, "unknown preset '" + name + "'" + did_you_mean(name, names) +
                           "; available in " + (home / kind).string() + ": " + join(names));
    }
  }
  merge_preset(path, section, merged);
}

Config load(const std::string& text, const std::string& file, const fs::path& config_dir,
            const std::string& default_name, const std::vector<std::string>& overrides,
            const LoadOptions& options) {
  const fs::path home = options.home.empty() ? home_dir() : options.home;
  Flat merged;
  flatten_document(parse_yaml(text, file), file, merged);
  for (const auto& o : overrides) apply_override(o, merged);
  if (options.resolve_presets) {
    resolve_preset("model", "models", home, config_dir, merged);
    resolve_preset("data", "data", home, config_dir, merged);
  }
  return build(merged, home, default_name);
}

std::string Checker::where(const std::string& key) const { return where_or_default(merged_, key); }

}  // namespace

Config load_config(const std::string& path, const std::vector<std::string>& overrides,
                   const LoadOptions& options) {
  const fs::path p(path);
  const std::string text = read_text(p, "config file");
  return load(text, path, p.has_parent_path() ? p.parent_path() : fs::path("."), p.stem().string(),
              overrides, options);
}

Config load_config_text(const std::string& yaml, const std::string& source_name,
                        const std::vector<std::string>& overrides, const LoadOptions& options) {
  return load(yaml, source_name, fs::current_path(), fs::path(source_name).stem().string(), overrides,
              options);
}

std::string to_yaml(const Config& config) {
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
      out << YAML::Key << f.key.substr(section.size() + 1) << YAML::Value;
      f.emit(out);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace biaslab

namespace biaslab {

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
