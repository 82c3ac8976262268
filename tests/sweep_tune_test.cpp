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
  // No extension beyond the grid here (SweepTune.AChoiceAtAnEdgeExtendsTheGrid).
  const SweepSpec spec = load_tuned(dir, std::string(kTunedSweep) + "  extend: 0\n");
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
  EXPECT_NE(page.find("; at the lower end of optim.lr's values (tune.extend (0) used); at the upper end of "
                      "optim.weight_decay's values (tune.extend (0) used)\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("chose `lr=x1,weight_decay=5.0e-4` (optim.lr=0.1, optim.weight_decay=5.0e-4)\n"), std::string::npos)
      << page;
}

namespace {

// The runs of `pending` whose name has `part`, finished with `val_acc`.
void finish_named(const Tuner& tuner, const Plan& pending, const std::string& part, double val_acc) {
  for (size_t i = 0; i < pending.runs.size(); ++i)
    if (pending.runs[i].name.find(part) != std::string::npos) finish_run(tuner, pending, i, val_acc);
}

std::vector<std::string> names_of(const Plan& pending) {
  std::vector<std::string> out;
  for (const auto& r : pending.runs) out.push_back(r.name);
  return out;
}

}  // namespace

// A choice at an end of a numeric grid gets the next value beyond it (the grid's ratio:
// 0.05, 0.1, 0.2 is log-spaced) at the same rung, until the best is inside or
// tune.extend values were added; a fresh tuner on the same files resumes the same way.
TEST(SweepTune, AChoiceAtAnEdgeExtendsTheGrid) {
  test::TempDir dir;
  const SweepSpec spec = load_tuned(dir, R"(
base: base.yaml
set: {data.val_fraction: 0.1}
grid:
  data.train_fraction: [0.5, 1.0]
  runtime.seed: [0]
tune:
  params:
    optim.lr: [0.05, 0.1, 0.2]
    optim.weight_decay: [0.0, 0.01, 0.02]
  rungs: 1
)");
  EXPECT_EQ(spec.tune.extend, 2);
  const Plan plan = make_plan(spec);
  Tuner tuner(spec, plan, Layout{dir / "sweep"});
  tuner.refresh();
  Plan pending = tuner.pending_plan();
  ASSERT_EQ(pending.runs.size(), 18u);
  // Cell 0's best is the largest lr (with weight decay 0.01, inside); cell 1's the
  // smallest lr with no weight decay.
  for (size_t i = 0; i < pending.runs.size(); ++i) {
    const std::string& n = pending.runs[i].name;
    const bool cell0 = n.rfind("train_fraction=0.5,", 0) == 0;
    const bool best = cell0 ? n.find("lr=0.2,weight_decay=0.01") != std::string::npos
                            : n.find("lr=0.05,weight_decay=0.0") != std::string::npos;
    finish_run(tuner, pending, i, best ? 0.8 : 0.5);
  }
  tuner.refresh();
  pending = tuner.pending_plan();
  // One extension per cell, of its first param at an edge, at rung 0.
  EXPECT_EQ(names_of(pending), (std::vector<std::string>{"train_fraction=0.5,rung=0,lr=0.4,weight_decay=0.01",
                                                          "train_fraction=1.0,rung=0,lr=0.025,weight_decay=0.0"}));
  EXPECT_NE(tuner.pending_configs(pending)[0].find("lr: 0.4\n"), std::string::npos);
  EXPECT_FALSE(tuner.cells()[0].decided());
  // Cell 0: 0.4 is better, so 0.8 comes next. Cell 1: 0.025 is worse, so lr 0.05 is
  // inside now; its weight decay 0 is at the grid's lower end, and the grid steps by 0.01
  // (it has a 0: not log-spaced): -0.01 would be next, which is not a valid config, so
  // the cell is decided with that edge noted.
  finish_named(tuner, pending, "lr=0.4,", 0.85);
  finish_named(tuner, pending, "lr=0.025,", 0.7);
  tuner.refresh();
  pending = tuner.pending_plan();
  EXPECT_EQ(names_of(pending), (std::vector<std::string>{"train_fraction=0.5,rung=0,lr=0.8,weight_decay=0.01"}));
  EXPECT_TRUE(tuner.cells()[1].decided());
  // Cell 0: 0.8 is better again, and tune.extend (2) is used up: decided, at the edge.
  finish_named(tuner, pending, "lr=0.8,", 0.9);
  // A fresh tuner (a resumed sweep) reads the same state from the files.
  Tuner resumed(spec, plan, Layout{dir / "sweep"});
  resumed.refresh();
  EXPECT_TRUE(resumed.pending_plan().runs.empty());
  for (const Tuner* t : {&resumed}) {
    const TuneCell& c0 = t->cells()[0];
    const TuneCell& c1 = t->cells()[1];
    ASSERT_TRUE(c0.decided() && c1.decided());
    EXPECT_EQ(c0.candidates[size_t(c0.chosen)].label, "lr=0.8,weight_decay=0.01");
    ASSERT_EQ(c0.edges.size(), 1u);
    EXPECT_EQ(c0.edges[0].key, "optim.lr");
    EXPECT_EQ(c0.edges[0].end, "upper");
    EXPECT_EQ(c0.edges[0].why, "tune.extend (2) used");
    EXPECT_EQ(c1.candidates[size_t(c1.chosen)].label, "lr=0.05,weight_decay=0.0");
    ASSERT_EQ(c1.edges.size(), 1u);
    EXPECT_EQ(c1.edges[0].key, "optim.weight_decay");
    EXPECT_EQ(c1.edges[0].end, "lower");
    EXPECT_NE(c1.edges[0].why.find("the next value, -0.01, is not a valid config"), std::string::npos) << c1.edges[0].why;
  }
  EXPECT_NE(resumed.final_config(0).find("lr: 0.8\n"), std::string::npos) << resumed.final_config(0);
  EXPECT_NE(resumed.final_config(1).find("lr: 0.05\n"), std::string::npos) << resumed.final_config(1);
  // tune.json and the report show every extension.
  resumed.save_record();
  const std::string record = read_file(resumed.layout().root / "tune.json");
  EXPECT_NE(record.find("\"extends\": \"optim.lr\""), std::string::npos);
  EXPECT_NE(record.find("\"extend\": 2"), std::string::npos);
  const Layout sweep_layout{dir / "sweep"};
  write_report(sweep_layout, plan, sweep_layout.root / "report");
  const std::string page = read_file(sweep_layout.root / "report" / "report.md");
  EXPECT_NE(page.find("| **lr=0.8,weight_decay=0.01** (beyond the grid of optim.lr) | 90.00 |"), std::string::npos) << page;
  EXPECT_NE(page.find("tried beyond the grid: `lr=0.4,weight_decay=0.01` 85.00%, `lr=0.8,weight_decay=0.01` 90.00%"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("2 of 2 cells tried values beyond a grid."), std::string::npos) << page;
  EXPECT_NE(page.find("at the upper end of optim.lr's values (tune.extend (2) used)"), std::string::npos) << page;
  const std::string tuning_csv = read_file(sweep_layout.root / "report" / "tuning.csv");
  EXPECT_NE(tuning_csv.find(",optim.lr\n"), std::string::npos) << tuning_csv;
  EXPECT_NE(page.find("at the lower end of optim.weight_decay's values (the next value, -0.01, is not a valid config"),
            std::string::npos)
      << page;
}

// {times: [...]} grids are log-spaced: the next factor beyond x2 is x4.
TEST(SweepTune, AFactorGridExtendsByItsRatio) {
  test::TempDir dir;
  const SweepSpec spec = load_tuned(dir, "base: base.yaml\nset: {data.val_fraction: 0.1}\ngrid: {runtime.seed: [0]}\n"
                                         "tune: {params: {optim.lr: {times: [0.5, 1, 2]}}, extend: 1}\n");
  const Plan plan = make_plan(spec);
  Tuner tuner(spec, plan, Layout{dir / "sweep"});
  tuner.refresh();
  Plan pending = tuner.pending_plan();
  ASSERT_EQ(pending.runs.size(), 3u);
  finish_named(tuner, pending, "lr=x0.5", 0.6);
  finish_named(tuner, pending, "lr=x1", 0.7);
  finish_named(tuner, pending, "lr=x2", 0.8);
  tuner.refresh();
  pending = tuner.pending_plan();
  EXPECT_EQ(names_of(pending), (std::vector<std::string>{"all,rung=0,lr=x4"}));
  EXPECT_NE(tuner.pending_configs(pending)[0].find("lr: 0.4\n"), std::string::npos);
  // Worse beyond the edge: x2 is inside now.
  finish_named(tuner, pending, "lr=x4", 0.75);
  tuner.refresh();
  ASSERT_TRUE(tuner.cells()[0].decided());
  EXPECT_EQ(tuner.cells()[0].candidates[size_t(tuner.cells()[0].chosen)].label, "lr=x2");
  EXPECT_TRUE(tuner.cells()[0].edges.empty());
}

// A categorical param of named override sets (a regularisation level) is tuned in the
// same section, crossed with the numeric ones, and never extended.
TEST(SweepTune, VariantsAreACategoricalParam) {
  test::TempDir dir;
  const SweepSpec spec = load_tuned(dir, R"(
base: base.yaml
set: {data.val_fraction: 0.1}
grid: {runtime.seed: [0]}
tune:
  params:
    regularisation:
      variants:
        none: {}
        smooth: {train.label_smoothing: 0.1, optim.weight_decay: 0.05}
    optim.lr: [0.05, 0.1]
  extend: 0
)");
  ASSERT_EQ(spec.tune.params.size(), 2u);
  EXPECT_EQ(spec.tune.params[0].values, (std::vector<std::string>{"none", "smooth"}));
  EXPECT_EQ(spec.tune.candidates(), 4u);
  const Plan plan = make_plan(spec);
  Tuner tuner(spec, plan, Layout{dir / "sweep"});
  tuner.check();
  tuner.refresh();
  Plan pending = tuner.pending_plan();
  ASSERT_EQ(pending.runs.size(), 4u);
  EXPECT_EQ(pending.runs[2].name, "all,rung=0,regularisation=smooth,lr=0.05");
  const auto configs = tuner.pending_configs(pending);
  EXPECT_NE(configs[2].find("label_smoothing: 0.1\n"), std::string::npos) << configs[2];
  EXPECT_NE(configs[2].find("weight_decay: 0.05\n"), std::string::npos) << configs[2];
  EXPECT_NE(configs[0].find("label_smoothing: 0.0\n"), std::string::npos) << configs[0];
  // Rung 0 keeps two; rung 1 picks smooth with lr 0.1.
  for (size_t i = 0; i < 4; ++i) finish_run(tuner, pending, i, i == 3 ? 0.9 : i == 2 ? 0.8 : 0.1 * double(i));
  tuner.refresh();
  pending = tuner.pending_plan();
  ASSERT_EQ(pending.runs.size(), 2u);
  finish_named(tuner, pending, "smooth,lr=0.1", 0.95);
  finish_named(tuner, pending, "smooth,lr=0.05", 0.9);
  tuner.refresh();
  ASSERT_TRUE(tuner.cells()[0].decided());
  EXPECT_EQ(tuner.cells()[0].candidates[size_t(tuner.cells()[0].chosen)].label, "regularisation=smooth,lr=0.1");
  const std::string final0 = tuner.final_config(0);
  EXPECT_NE(final0.find("label_smoothing: 0.1\n"), std::string::npos) << final0;
  EXPECT_NE(final0.find("lr: 0.1\n"), std::string::npos) << final0;
  tuner.save_record();
  const Layout sweep_layout{dir / "sweep"};
  write_report(sweep_layout, plan, sweep_layout.root / "report");
  const std::string page = read_file(sweep_layout.root / "report" / "report.md");
  EXPECT_NE(page.find("regularisation in variants [none = {}; smooth = {train.label_smoothing: 0.1, "
                      "optim.weight_decay: 0.05}]"),
            std::string::npos)
      << page;
  // Refusals name the problem.
  const std::string head = "base: base.yaml\nset: {data.val_fraction: 0.1}\ngrid:\n  optim.lr: [0.1, 0.2]\n  runtime.seed: [0]\n";
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {model.reg: {variants: {a: {}, b: {}}}}}").find("plain word"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {reg: {variants: {a: {}, b: {optim.lr: 0.3}}}}}")
                .find("'optim.lr' is swept"),
            std::string::npos);
  EXPECT_NE(tune_error_of(dir, head + "tune: {params: {reg: {variants: {a: {}}}}}").find("two or more labels"),
            std::string::npos);
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
