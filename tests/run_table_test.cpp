#include "engine/run_table.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "core/file_lock.h"
#include "test_util.h"

using namespace biaslab;
namespace fs = std::filesystem;

namespace {

void fake_run(const fs::path& dir, const std::string& summary, const std::string& metrics = "",
              const std::string& timing = "") {
  fs::create_directories(dir);
  test::write_text(dir / "meta.json", R"({"biaslab_version": "test"})");
  if (!summary.empty()) test::write_text(dir / "summary.json", summary);
  if (!metrics.empty()) test::write_text(dir / "metrics.csv", metrics);
  if (!timing.empty()) test::write_text(dir / "timing.csv", timing);
}

std::string summary_json(const std::string& preset, int64_t train_size, double best_val, double final_test) {
  return R"({"model": {"family": "resnet", "preset": ")" + preset + R"(", "parameters": 272186},
             "data": {"train_size": )" + std::to_string(train_size) + R"(}, "steps": 300,
             "selection_metric": "val_acc", "best": {"val_acc": )" + std::to_string(best_val) + R"(},
             "final": {"test_acc": )" + std::to_string(final_test) + "}}";
}

}  // namespace

TEST(RunTable, ListsRunsRecursivelyWithTheirStateAndSorts) {
  test::TempDir tmp;
  const std::string timing = "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n"
                             "1,10.000,0,0,0,1,0,100\n2,12.500,0,0,0,1,0,100\n";
  fake_run(tmp / "a", summary_json("resnet20", 600, 0.8, 0.75), "", timing);
  fake_run(tmp / "sweeps" / "s" / "runs" / "seed=0", summary_json("resnet56", 60000, 0.9, 0.93));
  // Started, one epoch recorded, no checkpoint and nobody holding it: failed.
  fake_run(tmp / "b", "", "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc\n1,20,0.1,1,0.5,,,1,0.6\n");
  fs::create_directories(tmp / "not_a_run" / "empty");
  // A run in progress: its lock is held.
  fake_run(tmp / "c", "");
  FileLock lock(tmp / "c" / ".lock");
  ASSERT_TRUE(lock.held());

  std::vector<RunRow> rows = list_runs(tmp.path());
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].name, "a");
  EXPECT_EQ(rows[0].state, "complete");
  EXPECT_EQ(rows[0].preset, "resnet20");
  EXPECT_EQ(rows[0].train_size, 600);
  EXPECT_EQ(rows[0].steps_done, 300);
  EXPECT_DOUBLE_EQ(rows[0].best_acc, 0.8);
  EXPECT_DOUBLE_EQ(rows[0].final_acc, 0.75);
  EXPECT_DOUBLE_EQ(rows[0].time_s, 22.5);
  EXPECT_EQ(rows[1].name, "b");
  EXPECT_EQ(rows[1].state, "failed");
  EXPECT_DOUBLE_EQ(rows[1].best_acc, 0.6);  // from metrics.csv (test: no validation split)
  EXPECT_EQ(rows[2].name, "c");
  EXPECT_EQ(rows[2].state, "running");
  EXPECT_EQ(rows[3].name, "sweeps/s/runs/seed=0");
  EXPECT_EQ(rows[3].parameters, 272186);

  sort_runs(rows, "final_acc");  // descending, unknown last
  EXPECT_EQ(rows[0].name, "sweeps/s/runs/seed=0");
  EXPECT_EQ(rows[1].name, "a");
  sort_runs(rows, "name");
  EXPECT_EQ(rows[0].name, "a");
  try {
    sort_runs(rows, "acc");
    FAIL() << "an unknown column must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of: name, family"), std::string::npos) << e.what();
  }

  const std::string csv = runs_csv(rows);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "name,family,preset,train_size,steps,planned,state,best_acc,final_acc,params,time_s");
  EXPECT_NE(csv.find("\nsweeps/s/runs/seed=0,resnet,resnet56,60000,300,300,complete,90.00,93.00,272186,\n"), std::string::npos)
      << csv;
  const std::string text = runs_text(rows);
  EXPECT_NE(text.find("4 run(s)"), std::string::npos);
  EXPECT_NE(text.find("resnet20 (resnet)"), std::string::npos) << text;
  EXPECT_THROW(list_runs(tmp / "missing"), ConfigError);
}
