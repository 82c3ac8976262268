#include <gtest/gtest.h>

#include <filesystem>

#include "core/errors.h"
#include "engine/run_dir.h"
#include "engine/trainer.h"
#include "test_util.h"

using namespace biaslab;
namespace fs = std::filesystem;

TEST(RunDirTiming, RowsCarryThePhasesAndSumIntoTheBreakdown) {
  EpochTiming a{1, 10.0, 0.5, 8.0, 1.0, 2.0, 0.25, 100.0};
  EpochTiming b{2, 12.0, 0.5, 10.0, 1.0, 2.0, 0.25, 90.0};
  const std::string csv = "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n" +
                          run_dir::timing_row(a) + run_dir::timing_row(b);
  EXPECT_EQ(run_dir::timing_row(a), "1,10.000,0.500,8.000,1.000,2.000,0.250,100.0\n");
  const auto j = run_dir::timing_summary(csv, 30.0, 2200);
  EXPECT_DOUBLE_EQ(j["train_time_s"].get<double>(), 22.0);
  EXPECT_DOUBLE_EQ(j["eval_time_s"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(j["train_images_per_s"].get<double>(), 100.0);
  const auto& d = j["breakdown_s"];
  EXPECT_DOUBLE_EQ(d["data"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(d["forward_backward"].get<double>(), 18.0);
  EXPECT_DOUBLE_EQ(d["optimizer"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(d["evaluation"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(d["checkpoints_and_metrics"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(d["progress_and_other"].get<double>(), 1.0);  // 22 - 1 - 18 - 2
  // Non-compute: data 1 + writes 0.5 + other 1 over 22 + 4 + 0.5 seconds of epochs.
  EXPECT_DOUBLE_EQ(j["non_compute_share"].get<double>(), 0.0943);  // 2.5 / 26.5 to 4 decimals
}

TEST(RunDirTiming, SumsOfMillisecondCellsPrintAsMilliseconds) {
  // 0.017 + 0.035 is 0.052000000000000005 in doubles; timing.json must say 0.052.
  const std::string csv = "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n"
                          "1,3.100,0.010,3.000,0.017,1.100,0.030,100.0\n"
                          "2,3.300,0.020,3.200,0.035,1.200,0.040,100.0\n";
  const auto j = run_dir::timing_summary(csv, 21.2624040771, 641);
  const std::string text = j.dump();
  EXPECT_NE(text.find("\"optimizer\":0.052,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"train_time_s\":6.4}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"last_process_wall_time_s\":21.262,"), std::string::npos) << text;
  EXPECT_NE(text.find("\"train_images_per_s\":100.2"), std::string::npos) << text;  // 641 / 6.4
  EXPECT_NE(text.find("\"progress_and_other\":0.118"), std::string::npos) << text;  // 6.4 - 0.03 - 6.2 - 0.052
}

TEST(RunDirTiming, KeptRowsStopAtTheResumedEpochAndConvertTheOldFormat) {
  const test::TempDir dir;
  const fs::path f = dir / "timing.csv";
  test::write_text(f, "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n"
                      "1,10.000,0.500,8.000,1.000,2.000,0.250,100.0\n2,12.000,0.500,10.000,1.000,2.000,0.250,90.0\n");
  EXPECT_EQ(run_dir::kept_timing_rows(f, 1),
            "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n"
            "1,10.000,0.500,8.000,1.000,2.000,0.250,100.0\n");
  // A run directory written before the phase split: its epochs keep their seconds.
  test::write_text(f, "epoch,train_s,eval_s,images_per_s\n1,10.000,2.000,100.0\n2,12.000,2.000,90.0\n");
  const std::string kept = run_dir::kept_timing_rows(f, 2);
  EXPECT_EQ(kept, "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n"
                  "1,10.000,0,0,0,2.000,0,100.0\n2,12.000,0,0,0,2.000,0,90.0\n");
  const auto j = run_dir::timing_summary(kept, 30.0, 2200);
  EXPECT_DOUBLE_EQ(j["train_time_s"].get<double>(), 22.0);
  EXPECT_DOUBLE_EQ(j["breakdown_s"]["progress_and_other"].get<double>(), 22.0);
  // Anything else is not a timing file: start over.
  test::write_text(f, "something,else\n1,2\n");
  EXPECT_EQ(run_dir::kept_timing_rows(f, 5), "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n");
  EXPECT_EQ(run_dir::kept_timing_rows(dir / "missing.csv", 5),
            "epoch,train_s,data_s,compute_s,optim_s,eval_s,save_s,images_per_s\n");
}

TEST(RunDirOwnership, OnlyBiaslabRunDirectoriesAreClaimedAndWipeKeepsForeignFiles) {
  test::TempDir dir;
  const fs::path run = dir / "run";
  EXPECT_NO_THROW(run_dir::claim(run)) << "a new folder";
  fs::create_directories(run);
  EXPECT_NO_THROW(run_dir::claim(run)) << "an empty folder";
  // A user's folder that happens to use biaslab's names is still theirs.
  fs::create_directories(run / "checkpoints");
  test::write_text(run / "checkpoints" / "last.pt", "not a checkpoint");
  test::write_text(run / "train.log", "my log");
  EXPECT_FALSE(run_dir::is_run_dir(run));
  try {
    run_dir::claim(run);
    FAIL() << "a foreign folder was claimed";
  } catch (const CheckpointError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(run.string() + " is not empty and is not a biaslab run directory (it holds checkpoints/, "
                                      "train.log)"),
              std::string::npos)
        << msg;
  }
  // biaslab's meta.json makes it a run directory; wipe then removes biaslab's files only.
  test::write_text(run / "meta.json", "{\"biaslab_version\": \"0\"}\n");
  EXPECT_TRUE(run_dir::is_run_dir(run));
  EXPECT_NO_THROW(run_dir::claim(run));
  test::write_text(run / "config.yaml", "name: x\n");
  test::write_text(run / "notes.txt", "mine");
  test::write_text(run / "checkpoints" / "epoch-0003.pt", "x");
  test::write_text(run / "checkpoints" / "mine.pt", "mine");
  fs::create_directories(run / "export");
  test::write_text(run / "export" / "best.state_dict.pt", "x");
  fs::create_directories(run / "only_biaslab");
  fs::create_directories(run / "tensorboard");
  test::write_text(run / "tensorboard" / "events.out.tfevents.1.host.2.0", "x");
  ASSERT_TRUE(fs::exists(run / "tensorboard" / "events.out.tfevents.1.host.2.0"));
  run_dir::wipe(run);
  for (const char* gone : {"config.yaml", "train.log", "checkpoints/last.pt", "checkpoints/epoch-0003.pt", "export",
                           "tensorboard"})
    EXPECT_FALSE(fs::exists(run / gone)) << gone;
  for (const char* kept : {"notes.txt", "checkpoints/mine.pt", "only_biaslab"})
    EXPECT_TRUE(fs::exists(run / kept)) << kept;
  // meta.json stays until the next run replaces it: the folder remains a run directory.
  EXPECT_TRUE(run_dir::is_run_dir(run));
}

TEST(RunDirSteps, RowsAndTheRowsKeptOnResume) {
  StepLog r;
  r.step = 50;
  r.epoch = 1;
  r.lr = 0.001;
  r.loss = 2.25;
  r.acc = 0.125;
  r.grad_norm = 1.5;
  r.images_per_s = 812.345;
  r.skipped_steps = 1;
  EXPECT_EQ(run_dir::step_row(r), "50,1,0.001,2.25,0.125,1.5,812.3,1\n");
  StepLog skipped;  // every step of the window skipped: no loss, accuracy or norm
  skipped.step = 100;
  skipped.epoch = 2;
  skipped.skipped_steps = 50;
  EXPECT_EQ(run_dir::step_row(skipped), "100,2,0,,,,0.0,50\n");

  const test::TempDir dir;
  const fs::path f = dir / "metrics_steps.csv";
  const std::string header = "step,epoch,lr,train_loss,train_acc,grad_norm,images_per_s,skipped_steps\n";
  test::write_text(f, header + "50,1,0.001,2.25,0.125,1.5,812.3,0\n100,1,0.001,2,0.25,1.5,800.0,0\n150,2,0.001,1.5");
  EXPECT_EQ(run_dir::kept_step_rows(f, 100), header + "50,1,0.001,2.25,0.125,1.5,812.3,0\n100,1,0.001,2,0.25,1.5,800.0,0\n");
  EXPECT_EQ(run_dir::kept_step_rows(f, 99), header + "50,1,0.001,2.25,0.125,1.5,812.3,0\n");
  EXPECT_EQ(run_dir::kept_step_rows(f, 1000), header + "50,1,0.001,2.25,0.125,1.5,812.3,0\n100,1,0.001,2,0.25,1.5,800.0,0\n")
      << "the row cut short by a crash is dropped";
  EXPECT_EQ(run_dir::kept_step_rows(dir / "missing.csv", 10), header);
  test::write_text(f, "other,header\n1,2\n");
  EXPECT_EQ(run_dir::kept_step_rows(f, 10), header);
}
