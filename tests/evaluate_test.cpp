#include "engine/evaluate.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "engine/run_dir.h"
#include "engine/train_state.h"

using namespace biaslab;

namespace {

// Logits are the pixels: image i of K pixels ranks the classes by pixel value.
class PixelLogits : public Classifier {
 public:
  torch::Tensor forward(const torch::Tensor& x) override { return x.flatten(1); }
  std::vector<Stage> stages() override {
    return {{"id", {}, [this](const torch::Tensor& x) { return forward(x); }}};
  }
};

// n images of `classes` pixels, pixel values a random permutation of 0..classes-1 (times
// 10); the label is the class with rank ranks[i] (0 = largest logit).
Split ranked_split(int64_t classes, const std::vector<int64_t>& ranks) {
  const auto n = int64_t(ranks.size());
  auto images = torch::zeros({n, 1, 1, classes}, torch::kUInt8);
  auto labels = torch::zeros({n}, torch::kLong);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  for (int64_t i = 0; i < n; ++i) {
    const auto order = torch::randperm(classes, gen, torch::kLong);  // order[r]: the class of rank r
    for (int64_t r = 0; r < classes; ++r)
      images[i][0][0][order[r].item<int64_t>()] = uint8_t(10 * (classes - r));
    labels[i] = order[ranks[size_t(i)]];
  }
  return {images, labels};
}

Loader loader_of(Split s, int64_t batch) {
  LoaderOptions lo;
  lo.batch_size = batch;
  lo.shuffle = lo.drop_last = false;
  lo.mean = {0.0};
  lo.std = {1.0};
  return Loader(std::move(s), lo);
}

}  // namespace

TEST(Evaluate, TopOneAndTopFiveCountTheLabelsRank) {
  // Ranks 0, 0, 1, 4, 5, 9, 3, 0, 6, 2 of 10 classes: top-1 3/10, top-5 7/10.
  Loader l = loader_of(ranked_split(10, {0, 0, 1, 4, 5, 9, 3, 0, 6, 2}), 4);  // batches of 4, 4, 2
  PixelLogits model;
  const EvalMetrics m = evaluate(model, l, torch::kCPU, "fp32");
  EXPECT_EQ(m.count, 10);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.3);
  EXPECT_DOUBLE_EQ(m.top5, 0.7);
}

TEST(Evaluate, NoTopFiveForFiveClassesOrFewer) {
  Loader l = loader_of(ranked_split(5, {0, 4, 1}), 2);
  PixelLogits model;
  const EvalMetrics m = evaluate(model, l, torch::kCPU, "fp32");
  EXPECT_NEAR(m.accuracy, 1.0 / 3, 1e-12);
  EXPECT_TRUE(std::isnan(m.top5));
}

TEST(Evaluate, TopFiveTravelsThroughTheStateMetricsAndSummary) {
  TrainState s;
  EpochRecord r;
  r.epoch = 1;
  r.step = 10;
  r.test = {0.5, 0.75, 0.875};
  r.has_val = true;
  r.val = {0.6, 0.7, 0.9};
  s.history.push_back(r);
  s.best_epoch = 1;
  const TrainState back = train_state_from_json(train_state_to_json(s));
  EXPECT_EQ(back.history[0].test.top5, 0.875);
  EXPECT_EQ(back.history[0].val.top5, 0.9);
  const std::string csv = run_dir::metrics_csv(back, false);
  EXPECT_EQ(csv,
            "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,test_loss,test_acc,val_top5_acc,test_top5_acc,"
            "skipped_steps\n1,10,0,0,0,0.6,0.7,0.5,0.75,0.9,0.875,0\n");
  // A checkpoint written before top-5 was recorded, or of 5 classes or fewer: no columns.
  std::string old = train_state_to_json(s);
  for (const char* key : {",\"top5\":0.875", ",\"top5\":0.9"}) old.erase(old.find(key), std::string(key).size());
  const TrainState before = train_state_from_json(old);
  EXPECT_FALSE(before.history[0].test.has_top5());
  EXPECT_EQ(run_dir::metrics_csv(before, false).find("top5"), std::string::npos);
}
