#include <gtest/gtest.h>

#include "core/errors.h"
#include "sweep/spec.h"
#include "test_util.h"

using namespace biaslab;
using namespace biaslab::sweep;

namespace {

SweepSpec load(const test::TempDir& dir, const std::string& text) {
  test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
  test::write_text(dir / "s.yaml", text);
  return load_sweep(dir / "s.yaml");
}

std::string error_of(const test::TempDir& dir, const std::string& text) {
  try {
    auto spec = load(dir, text);
    expand(spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

}  // namespace

TEST(SweepSpec, GridZipAndVariantsExpandInFileOrderLastAxisFastest) {
  test::TempDir dir;
  const SweepSpec spec = load(dir, R"(
base: base.yaml
set: {train.epochs: 2}
grid:
  model.preset: [resnet20, vit_lite_p4]
  runtime.seed: [0, 1]
zip:
  - data.train_fraction: [0.1, 1.0]
    train.eval_every: [5, 1]
variants:
  aug: {none: {data.hflip: false}, flip: {data.hflip: true, data.crop_padding: 2}}
)");
  EXPECT_EQ(spec.name, "s");
  EXPECT_EQ(spec.base_file, dir / "base.yaml");
  EXPECT_EQ(swept_keys(spec),
            (std::vector<std::string>{"model.preset", "runtime.seed", "data.train_fraction", "train.eval_every", "aug"}));
  const auto runs = expand(spec);
  ASSERT_EQ(runs.size(), 2u * 2 * 2 * 2);
  EXPECT_EQ(runs[0].name, "preset=resnet20,seed=0,train_fraction=0.1,aug=none");
  EXPECT_EQ(runs[1].name, "preset=resnet20,seed=0,train_fraction=0.1,aug=flip");
  EXPECT_EQ(runs[2].name, "preset=resnet20,seed=0,train_fraction=1.0,aug=none");
  EXPECT_EQ(runs[15].name, "preset=vit_lite_p4,seed=1,train_fraction=1.0,aug=flip");
  // set first, then the axes (zip partners together), then the run's name.
  EXPECT_EQ(runs[3].overrides,
            (std::vector<std::string>{"train.epochs=2", "model.preset=resnet20", "runtime.seed=0", "data.train_fraction=1.0",
                                      "train.eval_every=1", "data.hflip=true", "data.crop_padding=2",
                                      "name=preset=resnet20,seed=0,train_fraction=1.0,aug=flip"}));
  EXPECT_EQ(runs[3].swept.size(), 5u);
  EXPECT_EQ(runs[3].swept[4], (KeyValue{"aug", "flip"}));
}

TEST(SweepSpec, PerValueOverridesApplyToMatchingRunsOnly) {
  test::TempDir dir;
  const auto runs = expand(load(dir, R"(
base: base.yaml
grid:
  model.preset: [resnet20, vit_lite_p4, vit_tiny_p4]
  data.train_fraction: [0.10, 1]
overrides:
  - when: {model.preset: [vit_lite_p4, vit_tiny_p4]}
    set: {optim.name: adamw}
  - when: {model.preset: vit_lite_p4, data.train_fraction: 0.1}
    set: {train.epochs: 50}
)"));
  ASSERT_EQ(runs.size(), 6u);
  for (const auto& r : runs) {
    const bool vit = r.swept[0].second != "resnet20";
    EXPECT_EQ(has(r.overrides, "optim.name=adamw"), vit) << r.name;
    // 0.10 in the grid matches 0.1 in `when` (numbers compare as numbers).
    EXPECT_EQ(has(r.overrides, "train.epochs=50"), r.swept[0].second == "vit_lite_p4" && r.swept[1].second == "0.10")
        << r.name;
  }
}

TEST(SweepSpec, SequenceValuesAndNames) {
  test::TempDir dir;
  const auto runs = expand(load(dir, R"(
name: crops
base: {model: {preset: resnet20}, data: {preset: fashion_mnist}}
grid:
  data.random_resized_crop: [[0.08, 1.0], [0.5, 1.0]]
  model.preset: [resnet20]
)"));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].name, "random_resized_crop=0.08-1.0,preset=resnet20");
  EXPECT_TRUE(has(runs[0].overrides, "data.random_resized_crop=[0.08, 1.0]"));
}

TEST(SweepSpec, SameLastComponentUsesTheFullKeyInNames) {
  test::TempDir dir;
  const auto runs = expand(load(dir, R"(
base: base.yaml
grid: {runtime.seed: [0], other.seed: [1], model.norm: [batchnorm]}
)"));
  // (expand does not check keys; resolve_configs does.)
  EXPECT_EQ(runs[0].name, "runtime.seed=0,other.seed=1,norm=batchnorm");
  EXPECT_TRUE(is_replicate_key("runtime.seed"));
  EXPECT_TRUE(is_replicate_key("data.subset_seed"));
  EXPECT_FALSE(is_replicate_key("model.norm"));
}

TEST(SweepSpec, BadSweepFilesNameTheLineAndTheProblem) {
  test::TempDir dir;
  auto expect = [&](const std::string& text, const std::vector<std::string>& parts) {
    const std::string e = error_of(dir, text);
    ASSERT_FALSE(e.empty()) << "no error for:\n" << text;
    for (const auto& p : parts) EXPECT_NE(e.find(p), std::string::npos) << "'" << p << "' not in: " << e;
  };
  expect("base: base.yaml\ngrid: {model.norm: [none]}\ngird: {}\n", {"s.yaml:3", "unknown sweep key 'gird'"});
  expect("grid: {model.norm: [none]}\n", {"missing 'base'"});
  expect("base: nothere.yaml\ngrid: {model.norm: [none]}\n", {"s.yaml:1", "nothere.yaml not found"});
  expect("base: base.yaml\n", {"nothing to sweep"});
  expect("base: base.yaml\ngrid: {model.norm: []}\n", {"s.yaml:2", "grid.model.norm", "non-empty list"});
  expect("base: base.yaml\ngrid: {model.norm: none}\n", {"non-empty list"});
  expect("base: base.yaml\ngrid: {norm: [none]}\n", {"name the section too"});
  expect("base: base.yaml\ngrid: {model.norm: [none, none]}\n", {"listed twice"});
  expect("base: base.yaml\nzip:\n  - {model.norm: [none, batchnorm], model.residual: [true]}\n",
         {"s.yaml:3", "'model.residual' has 1 values but 'model.norm' has 2"});
  expect("base: base.yaml\nset: {model.norm: none}\ngrid: {model.norm: [none]}\n", {"both in set: and swept"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\nzip: [{model.norm: [none]}]\n", {"swept twice"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\noverrides: [{when: {model.depth: 2}, set: {train.epochs: 1}}]\n",
         {"'model.depth' is not a swept key"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\noverrides: [{when: {model.norm: none}, set: {model.norm: x}}]\n",
         {"is swept; an override cannot change it"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\nreport: {x: runtime.seed}\n", {"not a swept key"});
  expect("base: base.yaml\ngrid: {runtime.seed: [0]}\nreport: {x: runtime.seed}\n", {"is a seed"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\nreport: {metric: test_acc}\n", {"final.<accuracy> or best.<accuracy>"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\nreport: {metric: final.test_loss}\n", {"final.<accuracy>"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\nbase: base.yaml\n", {"s.yaml:3", "'base' appears twice"});
  expect("base: base.yaml\nvariants: {m.x: {a: {model.depth: 1}}}\n", {"plain word"});
  expect("base: base.yaml\ngrid: {model.depth: [1]}\nvariants: {m: {a: {model.depth: 2}}}\n", {"swept by grid or zip"});
  expect("base: base.yaml\ngrid: {model.norm: ['a/b', 'a b']}\n", {"share the directory name 'norm=a-b'"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\noverrides: [{when: {model.norm: nnoe}, set: {train.epochs: 1}}]\n",
         {"s.yaml:3", "model.norm is never 'nnoe'"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\noverrides: [{when: model.norm, set: {train.epochs: 1}}]\n",
         {"when: expected a mapping"});
  expect("base: base.yaml\nzip: [{data.train_fraction: [0.1], train.epochs: [5]}]\nreport: {x: train.epochs}\n",
         {"varies with 'data.train_fraction' in a zip group"});
  expect("base: base.yaml\ngrid: {model.norm: [none, batchnorm]}\nreport: {gap: {baseline: none, target: batchnorm}}\n",
         {"report.gap needs report.series"});
  expect("base: base.yaml\ngrid: {model.norm: [none, batchnorm]}\n"
         "report: {series: model.norm, gap: {baseline: none, target: layernorm}}\n",
         {"s.yaml:3", "report.gap.target: model.norm is never 'layernorm'", "its values: none, batchnorm"});
  expect("base: base.yaml\ngrid: {model.norm: [none, batchnorm]}\n"
         "report: {series: model.norm, gap: {baseline: none, target: none}}\n",
         {"baseline and target are the same value 'none'"});
  expect("base: base.yaml\ngrid: {model.norm: [none, batchnorm]}\nreport: {series: model.norm, gap: [none, batchnorm]}\n",
         {"expected {baseline: VALUE, target: VALUE}"});
  expect("base: base.yaml\ngrid: {model.norm: [none]}\nreport: {x: [model.norm]}\n", {"report.x: expected a single value"});
  expect("base: base.yaml\nname: [a, b]\ngrid: {model.norm: [none]}\n", {"s.yaml:2"});
  expect("base: base.yaml\nname: ..\ngrid: {model.norm: [none]}\n", {"must use only"});
  expect("base: base.yaml\ngrid: {model.norm: [none\n", {"YAML syntax error"});
  expect("base: base.yaml\nvariants: {m: {a: {model.depth: 2}}}\ngrid: {model.depth: [1]}\n", {"swept by grid or zip"});
}

TEST(SweepSpec, HostileSweepFilesAreBoundedBeforeAnyRunIsMade) {
  test::TempDir dir;
  // 10^6 runs from six short lines: refused before expanding, max_runs raises the bound.
  std::string grid = "base: base.yaml\ngrid:\n";
  for (const char* key : {"optim.lr", "optim.weight_decay", "runtime.seed", "data.subset_seed", "train.epochs",
                          "sched.warmup_steps"})
    grid += std::string("  ") + key + ": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n";
  const std::string e = error_of(dir, grid);
  EXPECT_NE(e.find("s.yaml: the grid has more than 10000 runs (max_runs)"), std::string::npos) << e;
  EXPECT_EQ(expand(load(dir, "base: base.yaml\nmax_runs: 12\ngrid: {runtime.seed: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}\n"))
                .size(),
            10u);
  EXPECT_NE(error_of(dir, "base: base.yaml\nmax_runs: 2\ngrid: {runtime.seed: [0, 1, 2]}\n").find("more than 2 runs"),
            std::string::npos);
  EXPECT_NE(error_of(dir, "base: base.yaml\nmax_runs: 0\ngrid: {runtime.seed: [0]}\n").find("max_runs: expected a positive"),
            std::string::npos);
  // Nested aliases ("billion laughs") count as what they expand to.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    bomb += "]\n";
  }
  const std::string b = error_of(dir, bomb + "base: base.yaml\n");
  EXPECT_NE(b.find("expands to more than"), std::string::npos) << b;
  // Special files and oversized files are refused, not read.
  const std::string dev = [] {
    try {
      load_sweep("/dev/zero");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  }();
  EXPECT_NE(dev.find("/dev/zero: is a character device"), std::string::npos) << dev;
  test::write_text(dir / "huge.yaml", "base: base.yaml\n" + std::string(2 << 20, '#'));
  try {
    load_sweep(dir / "huge.yaml");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("limit for sweep files"), std::string::npos) << e.what();
  }
}
