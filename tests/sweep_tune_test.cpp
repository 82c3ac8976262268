// The `tune` section: the successive-halving schedule and selection (sweep/halving.h),
// the section's checks (sweep/spec.h) and the tuner's rungs, driven by summary.json
// files written here instead of training (sweep/tuner.h).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <sstream>

#include "config/loader.h"
#include "core/errors.h"
#include "core/fs.h"
#include "sweep/halving.h"
#include "sweep/ledger.h"
#include "sweep/plan.h"
#include "sweep/report.h"
#include "sweep/spec.h"
#include "sweep/tuner.h"
#include "test_util.h"

using namespace biaslab;
using namespace biaslab::sweep;
namespace fs = std::filesystem;

TEST(Halving, NineCandidatesEtaThreeCostTwoRuns) {
  EXPECT_EQ(halving_rungs(9, 3), 2);
  const auto s = halving_schedule(9, 3, 2);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].runs, 9);
  EXPECT_EQ(s[0].keep, 3);
  EXPECT_DOUBLE_EQ(s[0].share, 1.0 / 9);
  EXPECT_EQ(s[1].runs, 3);
  EXPECT_EQ(s[1].keep, 1);
  EXPECT_DOUBLE_EQ(s[1].share, 1.0 / 3);
  EXPECT_DOUBLE_EQ(halving_cost(s), 2.0);
}

TEST(Halving, RungsRoundUpAndFewerRungsAreAllowed) {
  EXPECT_EQ(halving_rungs(2, 3), 1);
  EXPECT_EQ(halving_rungs(3, 3), 1);
  EXPECT_EQ(halving_rungs(4, 3), 2);
  EXPECT_EQ(halving_rungs(27, 3), 3);
  EXPECT_EQ(halving_rungs(28, 3), 4);
  EXPECT_EQ(halving_rungs(8, 2), 3);
  const auto five = halving_schedule(5, 3, 2);  // 5 at 1/9 keep 2, 2 at 1/3 keep 1
  EXPECT_EQ(five[0].keep, 2);
  EXPECT_EQ(five[1].runs, 2);
  EXPECT_NEAR(halving_cost(five), 5.0 / 9 + 2.0 / 3, 1e-12);
  const auto one = halving_schedule(9, 3, 1);  // one rung: all nine at 1/3, the best chosen
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].runs, 9);
  EXPECT_EQ(one[0].keep, 1);
  EXPECT_DOUBLE_EQ(one[0].share, 1.0 / 3);
  EXPECT_THROW(halving_schedule(9, 3, 3), std::invalid_argument);
  EXPECT_THROW(halving_schedule(1, 3, 1), std::invalid_argument);
}

TEST(Halving, BestOfRanksFailuresLastAndBreaksTiesByOrder) {
  const double nan = std::nan("");
  EXPECT_EQ(best_of({0.5, nan, 0.9, 0.9, 0.1}, 3), (std::vector<size_t>{2, 3, 0}));
  EXPECT_EQ(best_of({nan, nan, 0.2}, 2), (std::vector<size_t>{2, 0}));
  EXPECT_EQ(best_of({0.3}, 5), (std::vector<size_t>{0}));
}

namespace {

const char* kTuneBase = "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n"
                    "optim: {name: sgd, lr: 0.1}\ntrain: {steps: 90}\nsched: {warmup_steps: 9}\n";

SweepSpec load_tuned(const test::TempDir& dir, const std::string& text) {
  test::write_text(dir / "base.yaml", kTuneBase);
  test::write_text(dir / "s.yaml", text);
  return load_sweep(dir / "s.yaml");
}

std::string tune_error_of(const test::TempDir& dir, const std::string& text) {
  try {
    load_tuned(dir, text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const char* kTunedSweep = R"(
base: base.yaml
set: {data.val_fraction: 0.1}
grid:
  data.train_fraction: [0.5, 1.0]
  runtime.seed: [0, 1]
tune:
  params:
    optim.lr: {times: [0.5, 1, 2]}
    optim.weight_decay: [1.0e-4, 5.0e-4, 1.0e-3]
)";

// Stands in for a finished tuning run: its config as the tuner wants it and a summary.
void finish_run(const Tuner& tuner, const Plan& pending, size_t i, double val_acc) {
  const auto configs = tuner.pending_configs(pending);
  const Layout& l = tuner.layout();
  fs::create_directories(l.root / "configs");
  test::write_text(l.config(pending.runs[i].name), configs[i]);
  fs::create_directories(l.run_dir(pending.runs[i].name));
  test::write_text(l.run_dir(pending.runs[i].name) / "summary.json",
                   "{\"best\": {\"val_acc\": " + std::to_string(val_acc) + "}}");
}

}  // namespace

TEST(SweepTune, SectionDefaultsAndCells) {
  test::TempDir dir;
  const SweepSpec spec = load_tuned(dir, kTunedSweep);
  ASSERT_TRUE(spec.tune.enabled());
  EXPECT_EQ(spec.tune.candidates(), 9u);
  EXPECT_EQ(spec.tune.metric, "best.val_acc");
  EXPECT_EQ(spec.tune.eta, 3);
  EXPECT_EQ(spec.tune.rungs, 2);
  EXPECT_EQ(spec.tune.per, (std::vector<std::string>{"data.train_fraction"}));  // seeds share a cell
  const auto runs = expand(spec);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[0].cell, "train_fraction=0.5");
  EXPECT_EQ(runs[1].cell, "train_fraction=0.5");
  EXPECT_EQ(runs[3].cell, "train_fraction=1.0");
}

TEST(SweepTune, BadSectionsNameTheProblem) {
  test::TempDir dir;
  const std::string head = "base: base.yaml\ngrid:\n  optim.lr: [0.1, 0.2]\n  runtime.seed: [0]\n";
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.lr: [0.1, 0.3]}}").find("'optim.lr' is swept"), std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.momentum: [0.9, 0.8]}, metric: best.test_acc}")
                .find("validation accuracy"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.momentum: [0.9]}}").find("one candidate"), std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.momentum: [0.9, 0.8]}, per: [runtime.seed]}").find("is a seed"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.momentum: [0.9, 0.8, 0.7]}, rungs: 2}")
                .find("down to one after 1 rung"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.momentum: [0.9, 0.8]}, eta: 1}").find("tune.eta"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.momentum: {times: [1, -2]}}}").find("positive"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {optim.momentum: [0.9, 0.8]}, rung: 1}").find("unknown key 'rung'"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {metric: best.val_acc}").find("missing 'params'"), std::string::npos);
}

TEST(SweepTune, ABudgetKeyCannotBeTuned) {
  test::TempDir dir;
  const SweepSpec spec = load_tuned(dir, "base: base.yaml\ngrid: {runtime.seed: [0]}\n"
                                         "tune: {params: {sched.warmup_steps: [0, 10]}}\n");
  const Plan plan = make_plan(spec);
  try {
    Tuner(spec, plan, Layout{dir / "sweep"});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'sched.warmup_steps' is a budget key"), std::string::npos) << e.what();
  }
}

TEST(SweepTune, TuningRunsNeedAValidationSplit) {
  test::TempDir dir;
  std::string text = kTunedSweep;
  text.replace(text.find("set: {data.val_fraction: 0.1}\n"), 30, "");
  const SweepSpec spec = load_tuned(dir, text);
  const Plan plan = make_plan(spec);
  const Tuner tuner(spec, plan, Layout{dir / "sweep"});
  try {
    tuner.check();
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("data.val_fraction is 0.0"), std::string::npos) << e.what();
  }
}

TEST(SweepTune, SuccessiveHalvingPicksTheBestOfTheLastRung) {
  test::TempDir dir;
  const SweepSpec spec = load_tuned(dir, kTunedSweep);
  const Plan plan = make_plan(spec);
  Tuner tuner(spec, plan, Layout{dir / "sweep"});
  tuner.check();
  tuner.refresh();
  // Rung 0: nine candidates per cell at 1/9 of the 90 steps (and of the 9 warm-up steps).
  Plan pending = tuner.pending_plan();
  ASSERT_EQ(pending.runs.size(), 18u);
  EXPECT_EQ(pending.runs[0].name, "train_fraction=0.5,rung=0,lr=x0.5,weight_decay=1.0e-4");
  const auto configs = tuner.pending_configs(pending);
  EXPECT_NE(configs[0].find("steps: 10\n"), std::string::npos) << configs[0];
  EXPECT_NE(configs[0].find("warmup_steps: 1\n"), std::string::npos);
  EXPECT_NE(configs[0].find("lr: 0.05\n"), std::string::npos);
  EXPECT_NE(configs[8].find("lr: 0.2\n"), std::string::npos);
  EXPECT_EQ(tuner.final_config(0), "");  // not decided

  // Cell 0: candidates 2, 5, 7 best (7 > 5 > 2); cell 1: all but candidate 4 fail.
  const Layout& tl = tuner.layout();
  Ledger ledger(tl.ledger());
  for (size_t i = 0; i < 9; ++i) finish_run(tuner, pending, i, i == 7 ? 0.9 : i == 5 ? 0.8 : i == 2 ? 0.7 : 0.1 + 0.01 * i);
  for (size_t i = 9; i < 18; ++i) {
    if (i == 13) {
      finish_run(tuner, pending, i, 0.5);
    } else {
      test::write_text(tl.config(pending.runs[i].name), configs[i]);
      ledger[pending.runs[i].name].state = "failed";
    }
  }
  ledger.save();
  tuner.refresh();
  pending = tuner.pending_plan();
  // Rung 1 at 1/3: three of cell 0, in rank order; of cell 1 only the one that did not
  // fail (a failed candidate is never promoted).
  ASSERT_EQ(pending.runs.size(), 3u + 1u);
  EXPECT_EQ(pending.runs[0].name, "train_fraction=0.5,rung=1,lr=x2,weight_decay=5.0e-4");  // candidate 7
  EXPECT_EQ(pending.runs[1].name, "train_fraction=0.5,rung=1,lr=x1,weight_decay=1.0e-3");  // candidate 5
  EXPECT_EQ(pending.runs[2].name, "train_fraction=0.5,rung=1,lr=x0.5,weight_decay=1.0e-3");  // candidate 2
  EXPECT_EQ(pending.runs[3].name, "train_fraction=1.0,rung=1,lr=x1,weight_decay=5.0e-4");  // candidate 4
  EXPECT_NE(tuner.pending_configs(pending)[0].find("steps: 30\n"), std::string::npos);
  // Rung 1 results: in cell 0 candidate 2 wins now.
  finish_run(tuner, pending, 0, 0.91);
  finish_run(tuner, pending, 1, 0.90);
  finish_run(tuner, pending, 2, 0.93);
  finish_run(tuner, pending, 3, 0.4);
  tuner.refresh();
  EXPECT_TRUE(tuner.pending_plan().runs.empty());
  ASSERT_TRUE(tuner.cells()[0].decided());
  EXPECT_EQ(tuner.cells()[0].chosen, 2);
  EXPECT_EQ(tuner.cells()[1].chosen, 4);
  // The seeded runs use the choice, on the full budget.
  const std::string final0 = tuner.final_config(1);
  EXPECT_NE(final0.find("lr: 0.05\n"), std::string::npos) << final0;
  EXPECT_NE(final0.find("weight_decay: 0.001\n"), std::string::npos);
  EXPECT_NE(final0.find("steps: 90\n"), std::string::npos);
  EXPECT_NE(final0.find("seed: 1\n"), std::string::npos);
  tuner.save_record();
  EXPECT_NE(read_file(tl.root / "tune.json").find("\"chosen\": \"lr=x0.5,weight_decay=1.0e-3\""), std::string::npos);
  EXPECT_TRUE(tuner.changed_runs().empty());
  // The report flags choices at an end of an ordered grid: cell 0's lr (the smallest
  // factor) and weight decay (the largest value); cell 1 chose inside both grids.
  const Layout sweep_layout{dir / "sweep"};
  const ReportOutput out = write_report(sweep_layout, plan, sweep_layout.root / "report");
  EXPECT_NE(out.summary_markdown.find("Tuning: 1 of 2 decided cells chose an end of optim.lr's grid (0 the largest, 1 "
                                      "the smallest value); 1 of 2 decided cells chose an end of optim.weight_decay's "
                                      "grid (1 the largest, 0 the smallest value)."),
            std::string::npos)
      << out.summary_markdown;
  const std::string page = read_file(sweep_layout.root / "report" / "report.md");
  EXPECT_NE(page.find("; at the lower end of optim.lr's grid; at the upper end of optim.weight_decay's grid\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("chose `lr=x1,weight_decay=5.0e-4` (optim.lr=0.1, optim.weight_decay=5.0e-4)\n"), std::string::npos)
      << page;
}

// A run measured in epochs (train.steps "~") is tuned on a share of its epochs.
TEST(SweepTune, AnEpochBudgetScalesTheEpochs) {
  test::TempDir dir;
  test::write_text(dir / "base.yaml", "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n"
                                      "optim: {name: sgd, lr: 0.1}\ntrain: {epochs: 30}\nsched: {warmup_steps: 300}\n");
  test::write_text(dir / "s.yaml", "base: base.yaml\nset: {data.val_fraction: 0.1}\ngrid: {runtime.seed: [0, 1]}\n"
                                   "tune: {params: {optim.lr: {times: [0.5, 1, 2]}}, per: []}\n");
  const SweepSpec spec = load_sweep(dir / "s.yaml");
  const Plan plan = make_plan(spec);
  Tuner tuner(spec, plan, Layout{dir / "sweep"});
  tuner.check();
  tuner.refresh();
  const Plan pending = tuner.pending_plan();
  ASSERT_EQ(pending.runs.size(), 3u);
  const std::string config = tuner.pending_configs(pending)[0];
  EXPECT_NE(config.find("epochs: 10\n"), std::string::npos) << config;
  EXPECT_NE(config.find("warmup_steps: 100\n"), std::string::npos) << config;
}

TEST(SweepTune, EveryCandidateFailingFailsTheCellAndAChangedRunIsNoticed) {
  test::TempDir dir;
  const SweepSpec spec = load_tuned(dir, kTunedSweep);
  const Plan plan = make_plan(spec);
  Tuner tuner(spec, plan, Layout{dir / "sweep"});
  tuner.refresh();
  const Plan pending = tuner.pending_plan();
  const auto configs = tuner.pending_configs(pending);
  const Layout& tl = tuner.layout();
  fs::create_directories(tl.root / "configs");
  Ledger ledger(tl.ledger());
  for (size_t i = 0; i < 9; ++i) {
    test::write_text(tl.config(pending.runs[i].name), configs[i]);
    ledger[pending.runs[i].name].state = "failed";
  }
  ledger.save();
  tuner.refresh();
  EXPECT_FALSE(tuner.cells()[0].open());
  EXPECT_NE(tuner.cells()[0].failure.find("every candidate of rung 0 failed"), std::string::npos);
  // With --retry-failed the failures are pending again, once.
  tuner.refresh(true);
  EXPECT_TRUE(tuner.cells()[0].open());
  EXPECT_EQ(tuner.pending_plan().runs.size(), 18u);
  tuner.mark_tried(tuner.pending_plan());
  tuner.refresh(true);
  EXPECT_FALSE(tuner.cells()[0].open());
  // A stored config that no longer matches is a changed run.
  std::string edited = configs[0];
  edited.replace(edited.find("steps: 10\n"), 10, "steps: 11\n");
  test::write_text(tl.config(pending.runs[0].name), edited);
  tuner.refresh();
  EXPECT_EQ(tuner.changed_runs(), (std::vector<std::string>{pending.runs[0].name}));
}

// Every shipped sweep file loads, resolves every run, and (tuned ones) every candidate.
TEST(SweepTune, ShippedStudiesResolve) {
  const fs::path dir = home_dir() / "configs" / "sweeps";
  int sweeps = 0, tuned = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml" || entry.path().stem().string().rfind("base", 0) == 0) continue;
    SCOPED_TRACE(entry.path().string());
    const SweepSpec spec = load_sweep(entry.path());
    const Plan plan = make_plan(spec);
    EXPECT_EQ(resolve_configs(spec, plan).size(), plan.runs.size());
    ++sweeps;
    if (!spec.tune.enabled()) continue;
    ++tuned;
    test::TempDir out;
    Tuner(spec, plan, Layout{out / "sweep"}).check();
  }
  EXPECT_GE(sweeps, 7);
  EXPECT_GE(tuned, 3);
}

// Each shipped transformer recipe, configs/recipe_<family>.yaml, is its family's final
// run in configs/sweeps/recipes_transformers.yaml: loaded with the sweep's `set` (less the
// tuned keys, whose value there is only the base the tuning grid scales), it resolves to
// the committed config of the family's seed-0 run, the learning rate its tuning chose
// included. Otherwise the files' numbers would not be the sweep's (docs/recipes.md).
TEST(SweepTune, TransformerRecipeFilesAreTheTunedFinalRuns) {
  const fs::path results = home_dir() / "docs" / "results" / "recipes_transformers";
  const SweepSpec spec = load_sweep(home_dir() / "configs" / "sweeps" / "recipes_transformers.yaml");
  std::set<std::string> tuned;
  for (const auto& p : spec.tune.params) tuned.insert(p.key);
  ASSERT_EQ(tuned, std::set<std::string>{"optim.lr"});
  std::vector<std::string> set;
  for (const auto& [key, value] : spec.set)
    if (!tuned.count(key)) set.push_back(key + "=" + value);
  for (const std::string family : {"vit_lite_p4", "convit_lite_p4", "vit_hybrid_lite", "cct_lite"}) {
    SCOPED_TRACE(family);
    // Named as the sweep names the run, and compared as the sweep decides whether a
    // stored run config changed.
    const std::string run = "seed=0,family=" + family;
    std::vector<std::string> overrides = set;
    overrides.push_back("name=" + run);
    const Config recipe = load_config((home_dir() / "configs" / ("recipe_" + family + ".yaml")).string(), overrides);
    const fs::path stored = results / "configs" / (run + ".yaml");
    ASSERT_TRUE(fs::exists(stored)) << stored;  // a missing file would not "differ"
    std::string difference;
    EXPECT_FALSE(stored_config_differs(stored, to_yaml(recipe), &difference)) << difference;
  }
}
