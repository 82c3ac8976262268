#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <sstream>

#include "core/errors.h"
#include "core/fs.h"
#include "sweep/compare.h"
#include "sweep/plan.h"
#include "test_util.h"

using namespace biaslab;
using namespace biaslab::sweep;
namespace fs = std::filesystem;

namespace {

// A sweep directory made from `sweep_yaml` (next to a base config), whose runs get the
// final test accuracy `acc(run)` (< 0: the run never finished) on `dataset`.
fs::path fake_sweep(const fs::path& root, const std::string& name, const std::string& sweep_yaml,
                    const std::function<double(const PlannedRun&)>& acc, const std::string& dataset = "fashion_mnist") {
  fs::create_directories(root);
  test::write_text(root / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
  test::write_text(root / (name + ".yaml"), "name: " + name + "\nbase: base.yaml\n" + sweep_yaml);
  const SweepSpec spec = load_sweep(root / (name + ".yaml"));
  const Plan plan = make_plan(spec);
  const Layout layout{root / name};
  prepare(layout, spec, plan, resolve_configs(spec, plan), false);
  for (const auto& run : plan.runs) {
    const double a = acc(run);
    if (a < 0) continue;
    const fs::path d = layout.run_dir(run.name);
    fs::create_directories(d);
    const nlohmann::json summary = {
        {"model", {{"family", "resnet"}, {"preset", "resnet20"}, {"parameters", 1000}, {"flops_per_image", 2000}}},
        {"data", {{"train_size", 600}, {"preset", dataset}, {"test_size", 100}}},
        {"final", {{"epoch", 3}, {"test_acc", a}, {"ema_test_acc", a + 0.01}}},
        {"best", {{"epoch", 3}, {"test_acc", a}}},
        {"images_seen", 1280},
        {"steps", 10},
        {"epochs", 3}};
    atomic_write(d / "summary.json", summary.dump());
  }
  return layout.root;
}

std::string swept(const PlannedRun& run, const std::string& key) {
  for (const auto& [k, v] : run.swept)
    if (k == key) return v;
  return "";
}

int seed_of(const PlannedRun& run) { return std::stoi(swept(run, "runtime.seed")); }

// The row of `csv` whose first cells are `prefix`.
std::string row(const std::string& csv, const std::string& prefix) {
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

}  // namespace

TEST(Compare, PairsRunsOfTwoSweepsBySeedWithinTheSharedKeys) {
  test::TempDir tmp;
  const fs::path dir = tmp.path();
  // The reference: one arm per training fraction. Compared: two presets per fraction.
  const auto ref = fake_sweep(dir, "cnn", "grid:\n  data.train_fraction: [0.1, 1.0]\n  runtime.seed: [0, 1, 2]\n",
                              [](const PlannedRun& r) {
                                const double base = swept(r, "data.train_fraction") == "0.1" ? 0.80 : 0.90;
                                return base + 0.01 * seed_of(r);
                              });
  const auto other = fake_sweep(
      dir, "vits",
      "grid:\n  model.preset: [vit_lite_p4, cct_lite]\n  data.train_fraction: [0.1, 1.0]\n  runtime.seed: [0, 1, 2]\n",
      [](const PlannedRun& r) {
        const bool small = swept(r, "data.train_fraction") == "0.1";
        const bool vit = swept(r, "model.preset") == "vit_lite_p4";
        if (vit && !small && seed_of(r) == 2) return -1.0;  // never finished
        // vit: 0.70, 0.72, 0.71 at 10% (differences -0.10, -0.09, -0.11); cct: ref + 0.02 * seed
        const double cnn = (small ? 0.80 : 0.90) + 0.01 * seed_of(r);
        if (vit) return (small ? 0.70 : 0.85) + (seed_of(r) == 1 ? 0.02 : seed_of(r) == 2 ? 0.01 : 0.0);
        return cnn + 0.02 * seed_of(r);
      });
  const Comparison c = compare_sweeps({ref, other}, "", "");

  // Arms: the fraction is shared (the context); the preset names the compared arms.
  EXPECT_NE(row(c.arms_csv, "data.train_fraction,arm,sweep,n,mean,sd,ci95_low,ci95_high"), "");
  EXPECT_EQ(row(c.arms_csv, "0.1,cnn,cnn,3,0.81,0.01,"), "0.1,cnn,cnn,3,0.81,0.01,0.785158,0.834842");
  EXPECT_NE(row(c.arms_csv, "1.0,vit_lite_p4,vits,2,0.86,"), "");  // the unfinished run is left out
  // vit_lite_p4 - cnn at 10%: -0.10, -0.09, -0.11 -> mean -0.1, sd 0.01,
  // half-width t(0.975, 2) = 4.3027 * 0.01 / sqrt(3) = 0.0248417 (stats.cpp's table value).
  const std::string vit = row(c.pairs_csv, "0.1,vit_lite_p4,cnn,3,");
  ASSERT_NE(vit, "") << c.pairs_csv;
  EXPECT_EQ(vit, "0.1,vit_lite_p4,cnn,3,-0.1,0.01,-0.124842,-0.0751583");
  // cct_lite - cnn: 0, 0.02, 0.04 per seed.
  EXPECT_EQ(row(c.pairs_csv, "1.0,cct_lite,cnn,"), "1.0,cct_lite,cnn,3,0.02,0.02,-0.0296833,0.0696833");
  // At 100% vit_lite_p4 has two pairs: -0.05 and -0.04 (t(0.975, 1) = 12.7062).
  EXPECT_EQ(row(c.pairs_csv, "1.0,vit_lite_p4,cnn,"), "1.0,vit_lite_p4,cnn,2,-0.045,0.00707107,-0.108531,0.018531");
  // The page names the pairing rule, lists the unfinished run and how to reproduce.
  EXPECT_NE(c.markdown.find("same runtime.seed and the same data.train_fraction"), std::string::npos);
  EXPECT_NE(c.markdown.find("| 0.1 | vit_lite_p4 | cnn | -10.00 ± 1.00 | [-12.48, -7.52] | 3 |"), std::string::npos)
      << c.markdown;
  EXPECT_NE(c.markdown.find("- vits: preset=vit_lite_p4,train_fraction=1.0,seed=2 (missing)"), std::string::npos)
      << c.markdown;
  EXPECT_NE(c.markdown.find("`biaslab compare " + ref.string() + " " + other.string() + " --metric final.test_acc`"),
            std::string::npos);

  // A context the compared sweep has no run planned in gives no row (0 pairs there is not news).
  const auto full_only = fake_sweep(dir, "full", "grid:\n  data.train_fraction: [1.0]\n  runtime.seed: [0, 1, 2]\n",
                                    [](const PlannedRun& r) { return 0.95 - 0.01 * seed_of(r); });
  const Comparison partial = compare_sweeps({ref, full_only}, "", "");
  EXPECT_EQ(row(partial.pairs_csv, "0.1,"), "") << partial.pairs_csv;
  EXPECT_EQ(row(partial.arms_csv, "0.1,full,"), "") << partial.arms_csv;
  EXPECT_NE(row(partial.arms_csv, "0.1,cnn,"), "");
  EXPECT_EQ(row(partial.pairs_csv, "1.0,full,cnn,3,0.03,0.02,"), "1.0,full,cnn,3,0.03,0.02,-0.0196833,0.0796833");

  // Another metric; the reproduce line relative to the output folder.
  const Comparison ema = compare_sweeps({ref, other}, "final.ema_test_acc", dir / "out");
  EXPECT_EQ(row(ema.arms_csv, "0.1,cnn,"), "0.1,cnn,cnn,3,0.82,0.01,0.795158,0.844842");
  EXPECT_NE(ema.markdown.find("`biaslab compare ../cnn ../vits --metric final.ema_test_acc --out .`"),
            std::string::npos)
      << ema.markdown;
  const auto files = write_comparison(ema, dir / "out");
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(read_file(dir / "out" / "pairs.csv"), ema.pairs_csv);
  write_comparison(c, dir / "out");  // an earlier comparison is rewritten in place
  EXPECT_EQ(read_file(dir / "out" / "compare.md"), c.markdown);
  EXPECT_THROW(write_comparison(c, ref), CheckpointError);  // a sweep directory is not overwritten
  EXPECT_TRUE(fs::exists(ref / "plan.json"));
}

TEST(Compare, RefusesWhatCannotBePaired) {
  test::TempDir tmp;
  const fs::path dir = tmp.path();
  const auto seeded = [](const PlannedRun& r) { return 0.8 + 0.01 * seed_of(r); };
  const auto a = fake_sweep(dir, "a", "grid:\n  runtime.seed: [0, 1]\n", seeded);
  const auto mnist = fake_sweep(dir, "b", "grid:\n  runtime.seed: [0, 1]\n", seeded, "mnist");
  const auto unseeded = fake_sweep(dir, "c", "grid:\n  optim.lr: [0.1, 0.2]\n", [](const PlannedRun&) { return 0.9; });
  const auto expect_error = [](std::vector<fs::path> dirs, const std::string& words) {
    try {
      compare_sweeps(dirs, "", "");
      ADD_FAILURE() << "no error; expected one naming: " << words;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_error({a}, "at least one more");
  expect_error({a, a}, "given twice");
  expect_error({a, mnist}, "tested on different data (fashion_mnist with 100 test images vs mnist with 100)");
  expect_error({a, unseeded}, "has the seed axes [none]");
  expect_error({unseeded, a}, "has no seed axis");
  EXPECT_THROW(compare_sweeps({a, dir / "nowhere"}, "", ""), CheckpointError);
  // Two sweeps without axes of their own are one arm each, named after the sweep.
  const auto b2 = fake_sweep(dir, "b2", "grid:\n  runtime.seed: [0, 1]\n",
                             [](const PlannedRun& r) { return 0.7 + 0.02 * seed_of(r); });
  const Comparison c = compare_sweeps({a, b2}, "", "");
  EXPECT_EQ(row(c.pairs_csv, "b2,a,"), "b2,a,2,-0.095,0.00707107,-0.158531,-0.031469");
  // Arms of two sweeps with the same name are told apart by the sweeps' names, both of them.
  const auto preset = [](const PlannedRun& r) { return 0.75 + 0.01 * seed_of(r); };
  const std::string one_preset = "grid:\n  model.preset: [vit_lite_p4]\n  runtime.seed: [0, 1]\n";
  const auto x1 = fake_sweep(dir, "x1", one_preset, preset), x2 = fake_sweep(dir, "x2", one_preset, preset);
  const Comparison named = compare_sweeps({a, x1, x2}, "", "");
  EXPECT_EQ(row(named.pairs_csv, "x1: vit_lite_p4,a,2,-0.05,"), "x1: vit_lite_p4,a,2,-0.05,0,-0.05,-0.05")
      << named.pairs_csv;
  EXPECT_NE(row(named.pairs_csv, "x2: vit_lite_p4,a,2,-0.05,"), "") << named.pairs_csv;
  EXPECT_NE(named.markdown.find("# Paired comparison: a, x1 and x2"), std::string::npos);
}
