// Config loading: the layers (preset file < experiment file < --set) flattened into one
// map of dotted keys, each value remembering where it came from (flat.h); read through
// the field table (field_table.h) and checked (checks.h, models/model_checks.h).
#include "config/loader.h"

#include <algorithm>
#include <cstdlib>

#include "config/checks.h"
#include "config/field_table.h"
#include "config/flat.h"
#include "config/suggest.h"
#include "config/yaml_io.h"
#include "core/build_info.h"
#include "core/errors.h"

namespace biaslab {
namespace fs = std::filesystem;
using namespace config_detail;

namespace {

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

Config build(const Flat& merged, const fs::path& home, const std::string& default_name) {
  Config c = read_fields(merged);
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

}  // namespace biaslab
