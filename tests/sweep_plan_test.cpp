#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/fs.h"
#include "sweep/plan.h"
#include "test_util.h"

using namespace biaslab;
using namespace biaslab::sweep;
namespace fs = std::filesystem;

namespace {
SweepSpec write_and_load(const test::TempDir& dir, const std::string& depths) {
  test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
  test::write_text(dir / "s.yaml", "base: base.yaml\ngrid:\n  model.layers: " + depths + "\n  runtime.seed: [0]\n");
  return load_sweep(dir / "s.yaml");
}
}  // namespace

TEST(SweepPlan, ResolvedConfigsAndStoredPlanRoundTrip) {
  test::TempDir dir;
  const SweepSpec spec = write_and_load(dir, "[[1, 1, 1], [2, 2, 2]]");
  const Plan plan = make_plan(spec);
  const auto configs = resolve_configs(spec, plan);
  ASSERT_EQ(configs.size(), 2u);
  EXPECT_NE(configs[1].find("layers: [2, 2, 2]"), std::string::npos) << configs[1];
  EXPECT_NE(configs[1].find("layers=2-2-2,seed=0"), std::string::npos);
  const Layout layout{dir / "sweep"};
  prepare(layout, spec, plan, configs, false);
  EXPECT_EQ(read_file(layout.config(plan.runs[1].name)), configs[1]);
  const Plan back = read_plan(layout.root);
  EXPECT_EQ(back.keys, plan.keys);
  EXPECT_EQ(back.axes, plan.axes);
  ASSERT_EQ(back.runs.size(), 2u);
  EXPECT_EQ(back.runs[1].name, plan.runs[1].name);
  EXPECT_EQ(back.runs[1].overrides, plan.runs[1].overrides);
  EXPECT_EQ(back.runs[1].swept, plan.runs[1].swept);
  // Same definition again: accepted, nothing to restart.
  EXPECT_TRUE(prepare(layout, spec, plan, configs, false).empty());
  // A sweep directory written by an older biaslab, whose resolved configs lack a key
  // added since (here runtime.memory_format): the same runs, not changed ones.
  for (const auto& run : plan.runs) {
    std::string old = read_file(layout.config(run.name));
    const auto at = old.find("  memory_format: auto\n");
    ASSERT_NE(at, std::string::npos) << old;
    old.erase(at, std::string("  memory_format: auto\n").size());
    test::write_text(layout.config(run.name), old);
  }
  EXPECT_TRUE(prepare(layout, spec, plan, configs, false).empty());
}

TEST(SweepPlan, AChangedDefinitionIsRefusedUnlessForced) {
  test::TempDir dir;
  const Layout layout{dir / "sweep"};
  {
    const SweepSpec spec = write_and_load(dir, "[[1, 1, 1], [2, 2, 2]]");
    const Plan plan = make_plan(spec);
    prepare(layout, spec, plan, resolve_configs(spec, plan), false);
    fs::create_directories(layout.run_dir(plan.runs[0].name));
    test::write_text(layout.run_dir(plan.runs[0].name) / "summary.json", "{}");
  }
  // The base config changes under the same sweep file: every run's config differs.
  {
    test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist, hflip: true}\n");
    test::write_text(dir / "s.yaml", "base: base.yaml\ngrid:\n  model.layers: [[1, 1, 1], [2, 2, 2]]\n  runtime.seed: [0]\n");
    const SweepSpec spec = load_sweep(dir / "s.yaml");
    const Plan plan = make_plan(spec);
    const auto configs = resolve_configs(spec, plan);
    // What `sweep --dry-run` shows: both runs changed, the first difference named, nothing moved.
    const PlanChanges changes = plan_changes(layout, plan, configs);
    EXPECT_EQ(changes.changed.size(), 2u);
    EXPECT_NE(changes.why.find("hflip"), std::string::npos) << changes.why;
    EXPECT_TRUE(fs::exists(layout.run_dir(plan.runs[0].name) / "summary.json"));
    try {
      prepare(layout, spec, plan, configs, false);
      FAIL() << "a changed definition was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("different sweep definition"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("hflip"), std::string::npos) << e.what();
    }
    const auto restarted = prepare(layout, spec, plan, configs, true);
    EXPECT_EQ(restarted.size(), 2u);
    // The finished run's directory is set aside, not deleted.
    EXPECT_FALSE(fs::exists(layout.run_dir(plan.runs[0].name)));
    EXPECT_TRUE(fs::exists(layout.root / "discarded" / plan.runs[0].name / "summary.json"));
  }
}

TEST(SweepPlan, ReportSettingsRoundTripAndAChangeToThemAloneIsAdopted) {
  test::TempDir dir;
  const Layout layout{dir / "sweep"};
  test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
  const std::string grid = "base: base.yaml\ngrid:\n  model.norm: [none, batchnorm, layernorm]\n  runtime.seed: [0]\n";
  test::write_text(dir / "s.yaml", grid);
  {
    const SweepSpec spec = load_sweep(dir / "s.yaml");
    const Plan plan = make_plan(spec);
    prepare(layout, spec, plan, resolve_configs(spec, plan), false);
    EXPECT_TRUE(read_plan(layout.root).report.gap_target.empty());
  }
  test::write_text(dir / "s.yaml", grid + "report: {series: model.norm, gap: {baseline: none, target: batchnorm}}\n");
  const SweepSpec spec = load_sweep(dir / "s.yaml");
  const Plan plan = make_plan(spec);
  EXPECT_TRUE(prepare(layout, spec, plan, resolve_configs(spec, plan), false).empty());
  const Plan back = read_plan(layout.root);
  EXPECT_EQ(back.report.series, "model.norm");
  EXPECT_EQ(back.report.gap_baseline, "none");
  EXPECT_EQ(back.report.gap_target, "batchnorm");
}

TEST(SweepPlan, AnInvalidRunConfigNamesTheSweepAndTheRun) {
  test::TempDir dir;
  test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n");
  test::write_text(dir / "s.yaml", "base: base.yaml\ngrid:\n  model.depth: [2]\n");
  const SweepSpec spec = load_sweep(dir / "s.yaml");
  try {
    resolve_configs(spec, make_plan(spec));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("s.yaml: run 'depth=2'"), std::string::npos) << what;
    EXPECT_NE(what.find("model.depth"), std::string::npos) << what;
  }
  EXPECT_THROW(read_plan(dir / "nothing"), CheckpointError);
}
