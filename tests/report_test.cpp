#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <typeinfo>

#include "core/opencv_support.h"
#include "core/errors.h"
#include "core/fs.h"
#include "sweep/ledger.h"
#include "sweep/plan.h"
#include "sweep/report.h"
#include "test_util.h"

using namespace biaslab;
using namespace biaslab::sweep;
namespace fs = std::filesystem;

namespace {

// A sweep directory with hand-written results: ViT ahead at 10% of the data, ResNet
// ahead at 100%; one run never finished.
struct FakeSweep {
  test::TempDir dir;
  Plan plan;
  Layout layout{dir / "sweep"};
  // final test accuracy by (preset, fraction) for seeds 0, 1, 2
  std::map<std::pair<std::string, std::string>, std::vector<double>> acc = {
      {{"resnet20", "0.1"}, {0.80, 0.82, 0.84}},
      {{"resnet20", "1.0"}, {0.91, 0.93, 0.95}},
      {{"vit_lite_p4", "0.1"}, {0.85, 0.86, 0.87}},
      {{"vit_lite_p4", "1.0"}, {0.90, 0.90, -1}},  // seed 2 never finished
  };
  FakeSweep() {
    test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
    test::write_text(dir / "s.yaml", R"(
base: base.yaml
grid:
  model.preset: [resnet20, vit_lite_p4]
  runtime.seed: [0, 1, 2]
zip:
  - data.train_fraction: [0.1, 1.0]
    train.eval_every: [3, 1]
report: {series: model.preset}
)");
    const SweepSpec spec = load_sweep(dir / "s.yaml");
    plan = make_plan(spec);
    prepare(layout, spec, plan, resolve_configs(spec, plan), false);
    for (const auto& run : plan.runs) {
      const std::string preset = run.swept[0].second, seed = run.swept[1].second, fraction = run.swept[2].second;
      const double a = acc.at({preset, fraction}).at(std::stoul(seed));
      if (a < 0) continue;
      const fs::path d = layout.run_dir(run.name);
      fs::create_directories(d);
      const nlohmann::json summary = {
          {"model", {{"family", preset == "resnet20" ? "resnet" : "vit"}, {"preset", preset}, {"parameters", 1000},
                     {"flops_per_image", 2000000}}},
          {"data", {{"train_size", fraction == "0.1" ? 6000 : 60000}}},
          {"final", {{"epoch", 3}, {"test_acc", a}, {"test_loss", 0.5}}},
          {"best", {{"epoch", 3}, {"test_acc", a}}},
          {"images_seen", 1280},
          {"steps", 10},
          {"epochs", 3}};
      atomic_write(d / "summary.json", summary.dump());
      atomic_write(d / "metrics.csv", fmt::format("epoch,step,lr,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,"
                                                  "skipped_steps\n1,4,0.1,1,0.5,,,,,0\n2,8,0.1,1,0.5,,,0.6,{},0\n"
                                                  "3,10,0.1,1,0.5,,,0.5,{},0\n",
                                                  a - 0.1, a));
    }
  }
};

std::vector<std::vector<std::string>> read_csv(const fs::path& file) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_file(file));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) cells.push_back(std::exchange(cell, ""));
      else cell += c;
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

TEST(Report, GroupsOverSeedsWithHandComputedStatistics) {
  FakeSweep f;
  const auto out = write_report(f.layout, f.plan, f.layout.root / "report");
  const auto rows = read_csv(f.layout.root / "report" / "summary.csv");
  ASSERT_EQ(rows.size(), 5u);  // header + 4 configurations
  EXPECT_EQ(rows[0][0], "model.preset");
  EXPECT_EQ(rows[0][1], "data.train_fraction");
  const auto col = [&](const std::string& name) {
    return size_t(std::find(rows[0].begin(), rows[0].end(), name) - rows[0].begin());
  };
  // resnet20 at 1.0: 0.91, 0.93, 0.95 -> mean 0.93, sd 0.02, half width 4.3027 * 0.02 / sqrt(3)
  const auto& r = rows[2];
  EXPECT_EQ(r[0], "resnet20");
  EXPECT_EQ(r[1], "1.0");
  EXPECT_EQ(r[col("n")], "3");
  EXPECT_NEAR(std::stod(r[col("final_test_acc_mean")]), 0.93, 1e-9);
  EXPECT_NEAR(std::stod(r[col("final_test_acc_sd")]), 0.02, 1e-9);
  const double half = 4.3027 * 0.02 / std::sqrt(3.0);
  EXPECT_NEAR(std::stod(r[col("final_test_acc_ci95_low")]), 0.93 - half, 1e-5);
  EXPECT_NEAR(std::stod(r[col("final_test_acc_ci95_high")]), 0.93 + half, 1e-5);
  EXPECT_EQ(r[col("family")], "resnet");
  // vit at 1.0: two of three runs finished: 0.90, 0.90.
  EXPECT_EQ(rows[4][col("n")], "2");
  EXPECT_EQ(rows[4][col("planned")], "3");
  EXPECT_NEAR(std::stod(rows[4][col("final_test_acc_mean")]), 0.90, 1e-9);
  EXPECT_NEAR(std::stod(rows[4][col("final_test_acc_sd")]), 0.0, 1e-9);

  const auto results = read_csv(f.layout.root / "report" / "results.csv");
  ASSERT_EQ(results.size(), 13u);
  EXPECT_EQ(results[0][0], "run");
  // One column per metric: the report metric (final.test_acc) is the final_test_acc column.
  EXPECT_EQ(std::count(results[0].begin(), results[0].end(), "final_test_acc"), 1);
  EXPECT_EQ(std::count(results[0].begin(), results[0].end(), "final.test_acc"), 0);
  int missing = 0;
  for (const auto& row : results) missing += row[5] == "missing";  // run, 4 swept keys, state
  EXPECT_EQ(missing, 1);

  // Verdict: ViT leads at 10%, ResNet overtakes at 100%; the CNN's advantage moves from
  // 82 - 86 = -4 points to 93 - 90 = +3 points.
  EXPECT_NE(out.summary_markdown.find("The leader changes at train_fraction = 1.0: resnet20 overtakes vit_lite_p4"),
            std::string::npos)
      << out.summary_markdown;
  EXPECT_NE(out.summary_markdown.find("-4.00 points at train_fraction = 0.1, +3.00 points at train_fraction = 1.0"),
            std::string::npos)
      << out.summary_markdown;
  EXPECT_NE(out.summary_markdown.find("1 planned run(s) have no results yet"), std::string::npos);
  // Plots need OpenCV; a build without it writes the same tables and no pictures.
  for (const char* png : {"accuracy_vs_train_fraction.png", "bars.png", "curves_train_fraction=0.1.png",
                          "curves_train_fraction=1.0.png"}) {
    const fs::path p = f.layout.root / "report" / png;
    ASSERT_EQ(fs::exists(p), kWithOpenCV) << png;
    if (kWithOpenCV) {
      EXPECT_EQ(read_file(p).substr(1, 3), "PNG") << png;
    }
  }
  EXPECT_EQ(read_file(f.layout.root / "report" / "report.md").find("![bars.png](bars.png)") != std::string::npos,
            kWithOpenCV);
}

namespace {
// A prepared sweep directory DIR/sweep for the sweep file `text` (with base.yaml).
Plan prepare_sweep(const test::TempDir& dir, const Layout& layout, const std::string& text) {
  test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
  test::write_text(dir / "s.yaml", text);
  const SweepSpec spec = load_sweep(dir / "s.yaml");
  Plan plan = make_plan(spec);
  prepare(layout, spec, plan, resolve_configs(spec, plan), false);
  return plan;
}

// The least summary.json the report reads: one final test accuracy.
void write_min_summary(const Layout& layout, const std::string& run, const std::string& family, double test_acc) {
  fs::create_directories(layout.run_dir(run));
  atomic_write(layout.run_dir(run) / "summary.json",
               nlohmann::json{{"model", {{"family", family}}}, {"data", {{"train_size", 100}}},
                              {"final", {{"test_acc", test_acc}}}, {"best", {{"epoch", 1}}}}
                   .dump());
}

}  // namespace

// Before any run finishes, a sweep with a data axis says so instead of heading an empty
// ranking.
TEST(Report, AlongADataAxisWithNoResultsSaysSo) {
  test::TempDir dir;
  const Layout layout{dir / "sweep"};
  const Plan plan = prepare_sweep(dir, layout, R"(
base: base.yaml
grid:
  model.preset: [resnet20, vit_lite_p4]
  data.train_fraction: [0.1, 1.0]
report: {series: model.preset}
)");
  const auto out = write_report(layout, plan, layout.root / "report");
  EXPECT_NE(out.summary_markdown.find("- No completed runs yet."), std::string::npos) << out.summary_markdown;
  EXPECT_EQ(out.summary_markdown.find("Ranking by"), std::string::npos) << out.summary_markdown;
  EXPECT_EQ(out.summary_markdown.find("leads at every"), std::string::npos) << out.summary_markdown;
}

TEST(Report, WithoutADataAxisReportsEachKeysEffect) {
  test::TempDir dir;
  const Layout layout{dir / "sweep"};
  const Plan plan = prepare_sweep(dir, layout, R"(
base: base.yaml
grid:
  model.norm: [batchnorm, none]
  model.residual: [true, false]
  runtime.seed: [0, 1]
)");
  // accuracy = 0.9 - 0.1 (no norm) - 0.2 (no residual) + 0.01 * seed
  for (const auto& run : plan.runs)
    write_min_summary(layout, run.name, "resnet",
                      0.9 - (run.swept[0].second == "none" ? 0.1 : 0) - (run.swept[1].second == "false" ? 0.2 : 0) +
                          0.01 * std::stoi(run.swept[2].second));
  const auto out = write_report(layout, plan, layout.root / "report");
  EXPECT_NE(out.summary_markdown.find("Best: norm=batchnorm, residual=true (90.50%); worst: norm=none, residual=false (60.50%)"),
            std::string::npos)
      << out.summary_markdown;
  // Within norm=batchnorm: residual true 90.5, false 70.5.
  EXPECT_NE(out.summary_markdown.find("- norm = batchnorm: residual (true 90.50%, false 70.50%)."), std::string::npos)
      << out.summary_markdown;
  EXPECT_EQ(fs::exists(layout.root / "report" / "bars.png"), kWithOpenCV);
}

TEST(Report, PairedDifferencesPerSeed) {
  FakeSweep f;
  write_report(f.layout, f.plan, f.layout.root / "report");
  const auto rows = read_csv(f.layout.root / "report" / "paired.csv");
  ASSERT_EQ(rows.size(), 3u);  // header + one pair at each of two sizes
  EXPECT_EQ(rows[0], (std::vector<std::string>{"data.train_fraction", "series", "reference", "n_pairs", "diff_mean",
                                               "diff_sd", "diff_ci95_low", "diff_ci95_high"}));
  // 10%: vit - resnet per seed = 0.05, 0.04, 0.03 -> mean 0.04, sd 0.01.
  EXPECT_EQ(rows[1][0], "0.1");
  EXPECT_EQ(rows[1][1], "vit_lite_p4");
  EXPECT_EQ(rows[1][2], "resnet20");
  EXPECT_EQ(rows[1][3], "3");
  EXPECT_NEAR(std::stod(rows[1][4]), 0.04, 1e-9);
  EXPECT_NEAR(std::stod(rows[1][5]), 0.01, 1e-9);
  EXPECT_NEAR(std::stod(rows[1][6]), 0.04 - 4.3027 * 0.01 / std::sqrt(3.0), 1e-5);
  // 100%: seed 2 of the ViT never finished, so two pairs: -0.01, -0.03.
  EXPECT_EQ(rows[2][3], "2");
  EXPECT_NEAR(std::stod(rows[2][4]), -0.02, 1e-9);
  EXPECT_NEAR(std::stod(rows[2][7]), -0.02 + 12.7062 * std::sqrt(2e-4) / std::sqrt(2.0), 1e-4);
  const std::string page = read_file(f.layout.root / "report" / "report.md");
  EXPECT_NE(page.find("## Paired differences"), std::string::npos);
  EXPECT_NE(page.find("| 0.1 | vit_lite_p4 | +4.00 ± 1.00 |"), std::string::npos) << page;
}

// `report --series KEY`: residual on vs off paired per seed within each norm, in a sweep
// whose own series is the norm; keys that cannot be a series are refused by name.
TEST(Report, AnotherSeriesPairsItsValuesWithinEachConfiguration) {
  test::TempDir dir;
  const Layout layout{dir / "sweep"};
  const Plan plan = prepare_sweep(dir, layout, R"(
base: base.yaml
grid:
  model.norm: [batchnorm, none]
  model.residual: [true, false]
  runtime.seed: [0, 1, 2]
  data.train_fraction: [1.0]
report: {series: model.norm}
)");
  // accuracy = 0.9 - 0.1 (no norm) - (no residual: 0.02 with batchnorm, 0.3 + 0.01 seed without)
  for (const auto& run : plan.runs) {
    const bool bn = run.swept[0].second == "batchnorm", res = run.swept[1].second == "true";
    const int seed = std::stoi(run.swept[2].second);
    write_min_summary(layout, run.name, "resnet", 0.9 - (bn ? 0 : 0.1) - (res ? 0 : bn ? 0.02 : 0.3 + 0.01 * seed));
  }
  const Plan by_residual = with_series(plan, "model.residual");
  EXPECT_EQ(by_residual.report.series, "model.residual");
  write_report(layout, by_residual, layout.root / "report-by-model.residual");
  const auto rows = read_csv(layout.root / "report-by-model.residual" / "paired.csv");
  ASSERT_EQ(rows.size(), 3u) << read_file(layout.root / "report-by-model.residual" / "paired.csv");
  EXPECT_EQ(rows[0][0], "model.norm");
  EXPECT_EQ(rows[1][0], "batchnorm");
  EXPECT_EQ(rows[1][2], "false");  // series value
  EXPECT_EQ(rows[1][3], "true");   // reference
  EXPECT_NEAR(std::stod(rows[1][5]), -0.02, 1e-9);
  EXPECT_EQ(rows[2][0], "none");
  EXPECT_NEAR(std::stod(rows[2][5]), -0.31, 1e-9);
  EXPECT_NEAR(std::stod(rows[2][6]), 0.01, 1e-9);
  // The page says which key it pairs (the folder name is not all a reader sees).
  EXPECT_NE(read_file(layout.root / "report-by-model.residual" / "report.md")
                .find("12 planned runs; metric: final.test_acc; series: model.residual."),
            std::string::npos);
  const auto refused = [&](const std::string& key, const std::string& why) {
    try {
      with_series(plan, key);
      ADD_FAILURE() << key << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("this sweep's axes: model.norm, model.residual, data.train_fraction"),
                std::string::npos)
          << e.what();
    }
  };
  refused("model.depth", "--series model.depth: not a swept key");
  refused("runtime.seed", "is a seed");
  refused("data.train_fraction", "is the report's x axis");
}

TEST(Report, GapClosedPerSizeFromPairedSeeds) {
  test::TempDir dir;
  const Layout layout{dir / "sweep"};
  const Plan plan = prepare_sweep(dir, layout, R"(
base: base.yaml
grid:
  runtime.seed: [0, 1, 2]
  data.train_fraction: [0.1, 1.0]
variants:
  attention:
    cnn: {model.preset: resnet20}
    global: {model.preset: vit_lite_p4}
    window: {model.preset: vit_lite_p4, model.attn_window: 3}
report: {x: data.train_fraction, series: attention, gap: {baseline: global, target: cnn}}
)");
  // Per seed s at 10%: global 0.70 + 0.01 s, cnn 0.80 + 0.02 s (gap 0.10 + 0.01 s: mean
  // 0.11), window 0.75 + 0.01 s (closes 0.05). At 100% the window run of seed 2 is missing:
  // global 0.80, cnn 0.90 + 0.01 s, window 0.88 -> seeds 0, 1: closes 0.08 of 0.105.
  for (const auto& run : plan.runs) {
    const int seed = std::stoi(run.swept[0].second);
    const bool small = run.swept[1].second == "0.1";
    const std::string attention = run.swept[2].second;
    if (!small && attention == "window" && seed == 2) continue;
    const double a = attention == "global" ? (small ? 0.70 + 0.01 * seed : 0.80)
                     : attention == "cnn"  ? (small ? 0.80 + 0.02 * seed : 0.90 + 0.01 * seed)
                                           : (small ? 0.75 + 0.01 * seed : 0.88);
    write_min_summary(layout, run.name, attention == "cnn" ? "resnet" : "vit", a);
  }
  write_report(layout, plan, layout.root / "report");
  const auto rows = read_csv(layout.root / "report" / "gap.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"data.train_fraction", "series", "baseline", "target", "n", "closed_mean",
                                               "closed_ci95_low", "closed_ci95_high", "gap_mean", "gap_ci95_low",
                                               "gap_ci95_high", "share"}));
  EXPECT_EQ(rows[1][0], "0.1");
  EXPECT_EQ(rows[1][1], "window");
  EXPECT_EQ(rows[1][4], "3");
  EXPECT_NEAR(std::stod(rows[1][5]), 0.05, 1e-9);
  EXPECT_NEAR(std::stod(rows[1][8]), 0.11, 1e-9);
  EXPECT_NEAR(std::stod(rows[1][11]), 0.05 / 0.11, 1e-5);
  EXPECT_NEAR(std::stod(rows[1][10]), 0.11 + 4.3027 * 0.01 / std::sqrt(3.0), 1e-5);
  EXPECT_EQ(rows[2][0], "1.0");
  EXPECT_EQ(rows[2][4], "2");
  EXPECT_NEAR(std::stod(rows[2][5]), 0.08, 1e-9);
  EXPECT_NEAR(std::stod(rows[2][8]), 0.105, 1e-9);
  EXPECT_NEAR(std::stod(rows[2][11]), 0.08 / 0.105, 1e-5);
  const std::string page = read_file(layout.root / "report" / "report.md");
  EXPECT_NE(page.find("## Gap closed"), std::string::npos) << page;
  EXPECT_NE(page.find("| 0.1 | window | 45% | +5.00 [+5.00, +5.00] |"), std::string::npos) << page;
  EXPECT_NE(page.find("| 1.0 | window | 76% | +8.00 [+8.00, +8.00] | +10.50 ["), std::string::npos) << page;
}

TEST(Report, RegimesNeedTrainingAccuracyAndRunsWithAnotherConfig) {
  FakeSweep f;
  // resnet20,seed=0 at 10% ran with another epoch count: left out of the statistics.
  // resnet20,seed=1 at 10% ran with other threads: the same experiment.
  const PlannedRun& drifted = f.plan.runs[0];
  const PlannedRun& same = f.plan.runs[2];
  ASSERT_EQ(drifted.name, "preset=resnet20,seed=0,train_fraction=0.1");
  ASSERT_EQ(same.name, "preset=resnet20,seed=1,train_fraction=0.1");
  std::string cfg = read_file(f.layout.config(drifted.name));
  cfg.replace(cfg.find("  epochs: 10\n"), 13, "  epochs: 11\n");
  test::write_text(f.layout.run_dir(drifted.name) / "config.yaml", cfg);
  cfg = read_file(f.layout.config(same.name));
  cfg.replace(cfg.find("  threads: auto\n"), 16, "  threads: 1\n");
  test::write_text(f.layout.run_dir(same.name) / "config.yaml", cfg);

  auto out = write_report(f.layout, f.plan, f.layout.root / "report");
  const auto results = read_csv(f.layout.root / "report" / "results.csv");
  const auto col = [&](const std::string& name) {
    return size_t(std::find(results[0].begin(), results[0].end(), name) - results[0].begin());
  };
  ASSERT_LT(col("config_drift"), results[0].size());
  EXPECT_NE(results[1][col("config_drift")].find("epochs: 11"), std::string::npos) << results[1][col("config_drift")];
  EXPECT_EQ(results[3][col("config_drift")], "");
  // The fake runs measured no clean training accuracy: no regime, and the report says why.
  EXPECT_EQ(results[1][col("regime")], "");
  EXPECT_EQ(results[1][col("final_train_eval_acc")], "");
  const auto summary = read_csv(f.layout.root / "report" / "summary.csv");
  EXPECT_EQ(summary[1][0], "resnet20");
  EXPECT_EQ(summary[1][std::find(summary[0].begin(), summary[0].end(), "n") - summary[0].begin()], "2");
  EXPECT_NE(out.summary_markdown.find("1 run(s) ran with a config other than the sweep's planned one"), std::string::npos)
      << out.summary_markdown;
  EXPECT_NE(out.summary_markdown.find("Runs: cannot tell 11 (results.csv: regime)"), std::string::npos)
      << out.summary_markdown;
  EXPECT_NE(out.summary_markdown.find("No run measured its clean training accuracy"), std::string::npos)
      << out.summary_markdown;
  EXPECT_EQ(out.summary_markdown.find("converged"), std::string::npos) << out.summary_markdown;
}

// A sweep over the budget (train.epochs 10 and 20) with clean training accuracy: each
// run's regime from its curve, each configuration's from the paired change to the next
// budget, and "converged" only where that change is within report.converged_delta.
TEST(Report, RegimesAndTheBudgetComparison) {
  test::TempDir dir;
  test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
  test::write_text(dir / "s.yaml", "base: base.yaml\ngrid:\n  model.preset: [resnet20, vit_lite_p4]\n"
                                   "  train.epochs: [10, 20]\n  runtime.seed: [0, 1, 2]\nreport: {series: model.preset}\n");
  const SweepSpec spec = load_sweep(dir / "s.yaml");
  const Plan plan = make_plan(spec);
  const Layout layout{dir / "sweep"};
  prepare(layout, spec, plan, resolve_configs(spec, plan), false);
  // test accuracy by (preset, epochs) for seeds 0, 1, 2
  const std::map<std::pair<std::string, std::string>, std::vector<double>> acc = {
      {{"resnet20", "10"}, {0.900, 0.910, 0.920}},
      {{"resnet20", "20"}, {0.901, 0.911, 0.922}},  // +0.13 points: converged at 10
      {{"vit_lite_p4", "10"}, {0.800, 0.810, 0.820}},
      {{"vit_lite_p4", "20"}, {0.830, 0.840, 0.850}},  // +3 points: not converged at 10
  };
  for (const auto& run : plan.runs) {
    const std::string preset = run.swept[0].second, epochs = run.swept[1].second;
    const double a = acc.at({preset, epochs}).at(std::stoul(run.swept[2].second));
    // The ResNet fits (99%); the ViT's training accuracy equals its test accuracy, flat
    // over the last 20% of steps at 10 epochs and still rising at 20.
    const bool resnet = preset == "resnet20";
    const double train = resnet ? 0.99 : a;
    const double at80 = resnet ? 0.98 : epochs == "10" ? a - 0.001 : a - 0.05;
    const fs::path d = layout.run_dir(run.name);
    fs::create_directories(d);
    const nlohmann::json summary = {
        {"model", {{"family", resnet ? "resnet" : "vit"}, {"preset", preset}, {"parameters", 1000}, {"flops_per_image", 2000000}}},
        {"data", {{"train_size", 6000}}},
        {"final", {{"epoch", 3}, {"test_acc", a}, {"test_loss", 0.5}, {"train_eval_acc", train}}},
        {"best", {{"epoch", 3}, {"test_acc", a}}},
        {"images_seen", 1280},
        {"steps", 100},
        {"epochs", 3}};
    atomic_write(d / "summary.json", summary.dump());
    atomic_write(d / "metrics.csv",
                 fmt::format("epoch,step,lr,train_loss,train_acc,train_eval_loss,train_eval_acc,val_loss,val_acc,test_loss,"
                             "test_acc,skipped_steps\n1,50,0.1,1,0.5,1,{},,,1,{},0\n2,80,0.1,1,0.5,1,{},,,1,{},0\n"
                             "3,100,0.1,1,0.5,1,{},,,1,{},0\n",
                             at80 - 0.1, a - 0.1, at80, a, train, a));
  }
  const ReportOutput out = write_report(layout, plan, layout.root / "report");
  const auto column = [](const std::vector<std::vector<std::string>>& rows, const std::string& name) {
    return size_t(std::find(rows[0].begin(), rows[0].end(), name) - rows[0].begin());
  };
  // Per run, from its own curve: the ViT at 10 epochs rose 0.1 points (a plateau), at 20
  // it rose 5 (underfits); the ResNet fits.
  const auto results = read_csv(layout.root / "report" / "results.csv");
  ASSERT_EQ(results.size(), 13u);
  const size_t regime = column(results, "regime");
  ASSERT_LT(regime, results[0].size());
  EXPECT_EQ(results[1][0], "preset=resnet20,epochs=10,seed=0");
  EXPECT_EQ(results[1][regime], "fits");
  EXPECT_EQ(results[7][0], "preset=vit_lite_p4,epochs=10,seed=0");
  EXPECT_EQ(results[7][regime], "plateau");
  EXPECT_EQ(results[10][regime], "underfits");
  EXPECT_EQ(results[1][column(results, "final_train_eval_acc")], "0.99");
  // budget.csv: the paired change 10 -> 20, by hand: ResNet +0.001, +0.001, +0.002.
  const auto budget = read_csv(layout.root / "report" / "budget.csv");
  ASSERT_EQ(budget.size(), 3u);
  EXPECT_EQ(budget[0], (std::vector<std::string>{"model.preset", "budget_key", "from", "to", "n_pairs", "change_mean",
                                                 "change_sd", "change_ci95_low", "change_ci95_high", "converged"}));
  EXPECT_EQ(budget[1][0], "resnet20");
  EXPECT_EQ(budget[1][2], "10");
  EXPECT_EQ(budget[1][3], "20");
  EXPECT_EQ(budget[1][4], "3");
  EXPECT_NEAR(std::stod(budget[1][5]), 0.004 / 3, 1e-8);
  EXPECT_NEAR(std::stod(budget[1][8]), 0.004 / 3 + 4.3027 * std::sqrt(1.0 / 3.0) * 0.001 / std::sqrt(3.0), 1e-6);
  EXPECT_EQ(budget[1][9], "yes");
  EXPECT_EQ(budget[2][0], "vit_lite_p4");
  EXPECT_NEAR(std::stod(budget[2][5]), 0.03, 1e-9);
  EXPECT_EQ(budget[2][9], "no");
  // Per configuration: the ViT at 10 epochs underfits (the budget overrules its flat
  // tail); at 20 there is no next budget, and its curve says underfits.
  const auto summary = read_csv(layout.root / "report" / "summary.csv");
  ASSERT_EQ(summary.size(), 5u);
  const size_t sreg = column(summary, "regime"), conv = column(summary, "converged");
  ASSERT_LT(conv, summary[0].size());
  EXPECT_EQ(summary[1][sreg], "fits");
  EXPECT_EQ(summary[1][conv], "yes");
  EXPECT_EQ(summary[2][conv], "");
  EXPECT_EQ(summary[3][sreg], "underfits");
  EXPECT_EQ(summary[3][conv], "no");
  EXPECT_EQ(summary[4][sreg], "underfits");
  EXPECT_NEAR(std::stod(summary[1][column(summary, "train_eval_acc_mean")]), 0.99, 1e-9);
  EXPECT_NE(out.summary_markdown.find("1 of 2 budget steps measured are converged"), std::string::npos)
      << out.summary_markdown;
  EXPECT_NE(out.summary_markdown.find("| resnet20 | 10 | 20 | +0.13 ± 0.06 | [-0.01, +0.28] | 3 | yes |"),
            std::string::npos)
      << out.summary_markdown;
  EXPECT_NE(out.summary_markdown.find("Runs: fits 6, underfits 3, plateau 3"), std::string::npos) << out.summary_markdown;
  // A next budget with no finished runs measures nothing: no "converged" either way, and
  // the regime stays the curve's.
  for (const auto& run : plan.runs)
    if (run.swept[0].second == "resnet20" && run.swept[1].second == "20") fs::remove(layout.run_dir(run.name) / "summary.json");
  write_report(layout, plan, layout.root / "report-unfinished");
  const auto unfinished = read_csv(layout.root / "report-unfinished" / "summary.csv");
  EXPECT_EQ(unfinished[1][conv], "");
  EXPECT_EQ(unfinished[1][sreg], "fits");
  EXPECT_EQ(unfinished[3][conv], "no");
  // A stricter delta (0.1 points) leaves no budget converged.
  Plan strict = plan;
  strict.report.converged_delta = 0.001;
  const ReportOutput strict_out = write_report(layout, strict, layout.root / "report-strict");
  EXPECT_NE(strict_out.summary_markdown.find("0 of 1 budget steps measured are converged"), std::string::npos)
      << strict_out.summary_markdown;
}

namespace {

// Every node of `j` (objects and arrays included) as a JSON pointer; of a list of runs
// only the first, whose shape the others share.
void node_pointers(const nlohmann::json& j, const nlohmann::json::json_pointer& at,
                   std::vector<nlohmann::json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) node_pointers(v, at / k, out);
  if (j.is_array())
    for (size_t i = 0; i < j.size() && (i == 0 || at.to_string() != "/runs"); ++i) node_pointers(j[i], at / i, out);
}

// Writes `text` over `file`, then reads the plan and writes the report: either works or
// refuses with biaslab's own error (a message and an exit status); anything else fails.
void report_survives(const FakeSweep& f, const fs::path& file, const std::string& text, const std::string& what) {
  atomic_write(file, text);
  try {
    write_report(f.layout, read_plan(f.layout.root), f.dir / "out");
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << typeid(e).name() << ": " << e.what();
  }
}

// Each field of `file` edited in turn: another type or value, removed, an unknown key
// beside it; and the file truncated. Restored afterwards.
void fuzz_file(const FakeSweep& f, const fs::path& file) {
  using json = nlohmann::json;
  const std::string original = read_file(file);
  const json doc = json::parse(original);
  std::vector<json::json_pointer> nodes;
  node_pointers(doc, json::json_pointer(), nodes);
  const std::vector<json> replacements = {
      nullptr, 7, -1, 1.5, true, "", "runtime.seed", "model.preset", "data.train_fraction", "resnet20", "nope",
      json::array(), json::object(), json::array({json::array({"a", "b"})})};
  for (const auto& at : nodes) {
    for (const auto& r : replacements) {
      json edited = doc;
      edited[at] = r;
      report_survives(f, file, edited.dump(), file.filename().string() + " " + at.to_string() + " = " + r.dump());
    }
    if (!at.empty()) {
      json edited = doc;
      edited[at.parent_pointer()].is_object() ? void(edited[at.parent_pointer()].erase(at.back()))
                                              : edited[at.parent_pointer()].erase(std::stoul(at.back()));
      report_survives(f, file, edited.dump(), file.filename().string() + " without " + at.to_string());
    }
    if (doc[at].is_object()) {
      json edited = doc;
      edited[at]["unknown_key"] = 1;
      report_survives(f, file, edited.dump(), file.filename().string() + " " + at.to_string() + " + unknown_key");
    }
  }
  for (size_t n : {size_t(0), size_t(1), original.size() / 2, original.size() - 2})
    report_survives(f, file, original.substr(0, n), file.filename().string() + fmt::format(" cut at {}", n));
  atomic_write(file, original);
}

}  // namespace

// A hand-edited plan.json or ledger.json never crashes `report`: every field of a real one
// edited (wrong type, missing, unknown key, truncated file) gives a report or a refusal.
TEST(Report, EditedPlanAndLedgerFieldsNeverCrashIt) {
  FakeSweep f;
  Ledger ledger(f.layout.ledger());
  for (const auto& run : f.plan.runs) ledger[run.name].state = "done";
  ledger[f.plan.runs.back().name] = LedgerEntry{"failed", 3, "data error", 1, "t0", "t1", 2.5, 0};
  ledger.save();
  fuzz_file(f, f.layout.plan());
  fuzz_file(f, f.layout.ledger());
}

// The edits a user makes on purpose: a seed as x is ignored (with a warning); a key that
// is not an axis, a gap value the series never takes, a metric no run has, an unknown
// ledger state are refused naming the file, the field and what was expected.
TEST(Report, HandEditedReportSettingsAreCheckedByName) {
  FakeSweep f;
  const std::string original = read_file(f.layout.plan());
  const auto edited = [&](const std::string& pointer, const nlohmann::json& value) {
    nlohmann::json j = nlohmann::json::parse(original);
    j[nlohmann::json::json_pointer(pointer)] = value;
    atomic_write(f.layout.plan(), j.dump());
  };
  const auto refusal = [&] {
    try {
      write_report(f.layout, read_plan(f.layout.root), f.dir / "out");
    } catch (const CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("no refusal");
  };
  edited("/report/x", "runtime.seed");
  EXPECT_EQ(read_plan(f.layout.root).report.x, "");
  EXPECT_NO_THROW(write_report(f.layout, read_plan(f.layout.root), f.dir / "out"));
  edited("/report/x", "model.depth");
  EXPECT_NE(refusal().find("plan.json: report.x: 'model.depth' is not an axis of this sweep; expected \"\" or one of: "
                           "model.preset, runtime.seed, data.train_fraction"),
            std::string::npos)
      << refusal();
  edited("/report/x", "train.eval_every");
  EXPECT_NE(refusal().find("report.x: 'train.eval_every' varies with another key in a zip group"), std::string::npos)
      << refusal();
  edited("/report/gap", {{"baseline", "vit_lite_p4"}, {"target", "resnet50"}});
  EXPECT_NE(refusal().find("report.gap.target: model.preset is never 'resnet50' in this sweep; expected one of: "
                           "resnet20, vit_lite_p4"),
            std::string::npos)
      << refusal();
  edited("/report/serie", "model.preset");
  EXPECT_NE(refusal().find("report.serie: unknown key (did you mean 'series'?)"), std::string::npos) << refusal();
  edited("/report/metric", "final.tset_acc");
  EXPECT_NE(refusal().find("metric 'final.tset_acc' (report.metric of plan.json, or --metric): none of the 11 finished "
                           "runs' summary.json has it (did you mean 'final.test_acc'?); they have: best.test_acc, "
                           "final.test_acc"),
            std::string::npos)
      << refusal();
  atomic_write(f.layout.plan(), original);
  atomic_write(f.layout.ledger(), R"({"runs": {"x": {"state": "finished"}}})");
  EXPECT_NE(refusal().find("ledger.json: runs.x.state: unknown state 'finished'; expected one of: pending, running, "
                           "done, failed, interrupted"),
            std::string::npos)
      << refusal();
}

// The gap's slope with data, hand-computed from FakeSweep: vit_lite_p4 minus resnet20 per
// seed is +5, +4, +3 points at 6,000 images and -1, -3 at 60,000 (seed 2 never finished).
// On x = log10(images) - 3.778 (0 and 1): Sxx = 1.2, Sxy = -7.2, slope -6 points per
// decade, intercept 4, residual sum of squares 4 on 3 df: half-width
// t(0.975, 3) * sqrt(4 / 3 / 1.2) = 3.1824 * 1.05409 = 3.3546.
TEST(Report, GapPerDecadeOfTrainingImagesWithItsInterval) {
  FakeSweep f;
  const auto out = write_report(f.layout, f.plan, f.layout.root / "report");
  EXPECT_NE(out.summary_markdown.find("The gap against the data size:\n\n- vit_lite_p4 minus resnet20 per decade of "
                                      "training images: -6.00 points [-9.35, -2.65] (least squares of 5 per-seed "
                                      "paired differences on log10 of 6000 to 60000 images); the gap shrinks with "
                                      "data (the interval excludes 0).\n"),
            std::string::npos)
      << out.summary_markdown;
}

// A swept key named like one of the report's own columns (a variant axis `family`, as in
// recipes_transformers) leaves that column as run_family: no CSV has two columns of one name.
TEST(Report, NoTwoColumnsShareAName) {
  FakeSweep f;
  Plan plan = f.plan;
  for (auto& k : plan.keys)
    if (k == "model.preset") k = "family";
  for (auto& k : plan.axes)
    if (k == "model.preset") k = "family";
  for (auto& run : plan.runs)
    for (auto& [k, v] : run.swept)
      if (k == "model.preset") k = "family";
  plan.report.series = "family";
  write_report(f.layout, plan, f.layout.root / "report");
  for (const std::string file : {"results.csv", "summary.csv"}) {
    const auto header = read_csv(f.layout.root / "report" / file).front();
    std::set<std::string> names(header.begin(), header.end());
    EXPECT_EQ(names.size(), header.size()) << file;
    EXPECT_TRUE(names.count("family") && names.count("run_family")) << file;
  }
}
