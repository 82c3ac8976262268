#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/subset.h"

using namespace biaslab;

namespace {
// 10 classes with 20, 21, ..., 29 members, interleaved.
torch::Tensor make_labels() {
  std::vector<int64_t> v;
  for (int64_t c = 0; c < 10; ++c)
    for (int64_t i = 0; i < 20 + c; ++i) v.push_back(c);
  auto t = torch::tensor(v, torch::kLong);
  return t.index_select(0, torch::randperm(t.size(0), torch::TensorOptions().dtype(torch::kLong)));
}
int64_t count_class(const torch::Tensor& labels, const torch::Tensor& idx, int64_t c) {
  return (labels.index_select(0, idx) == c).sum().item<int64_t>();
}
bool subset_of(const torch::Tensor& a, const torch::Tensor& b) {
  return torch::isin(a, b).all().item<bool>();
}
}  // namespace

TEST(Subset, StratifiedFractionPerClass) {
  torch::manual_seed(1);
  auto labels = make_labels();
  SubsetSpec spec;
  spec.fraction = 0.5;
  auto s = stratified_subset(labels, 10, 3, spec);
  for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(count_class(labels, s.train, c), (20 + c + 1) / 2) << "class " << c;
  EXPECT_EQ(s.val.numel(), 0);
}

TEST(Subset, PerClass) {
  torch::manual_seed(1);
  auto labels = make_labels();
  SubsetSpec spec;
  spec.per_class = 7;
  auto s = stratified_subset(labels, 10, 0, spec);
  for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(count_class(labels, s.train, c), 7);
}

TEST(Subset, NestedAcrossSizesForOneSeed) {
  torch::manual_seed(2);
  auto labels = make_labels();
  torch::Tensor previous;
  for (double f : {0.1, 0.25, 0.5, 1.0}) {
    SubsetSpec spec;
    spec.fraction = f;
    spec.val_fraction = 0.2;
    auto s = stratified_subset(labels, 10, 11, spec);
    if (previous.defined()) {
      EXPECT_TRUE(subset_of(previous, s.train)) << "fraction " << f;
    }
    EXPECT_FALSE(torch::isin(s.train, s.val).any().item<bool>()) << "val and train overlap";
    previous = s.train;
  }
}

TEST(Subset, SeedChangesTheDrawButIsDeterministic) {
  torch::manual_seed(3);
  auto labels = make_labels();
  SubsetSpec spec;
  spec.fraction = 0.3;
  auto a = stratified_subset(labels, 10, 5, spec).train;
  auto b = stratified_subset(labels, 10, 5, spec).train;
  auto c = stratified_subset(labels, 10, 6, spec).train;
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, c));
}

TEST(Subset, ValidationIsStratifiedAndDisjoint) {
  torch::manual_seed(4);
  auto labels = make_labels();
  SubsetSpec spec;
  spec.val_fraction = 0.1;
  auto s = stratified_subset(labels, 10, 0, spec);
  EXPECT_EQ(s.train.numel() + s.val.numel(), labels.numel());
  for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(count_class(labels, s.val, c), std::llround(0.1 * (20 + c)));
}

// data.val_per_class: k of each class from the end of its permutation. The training subset
// is exactly the one drawn without validation (so sizes stay nested and a run with a small
// validation split trains on the images of one without), validation splits of different k
// are nested, and the two never overlap; a training share that does not fit leaves the rest.
TEST(Subset, ValidationPerClassFromTheTailKeepsTheTrainingDraw) {
  torch::manual_seed(1);
  auto labels = make_labels();
  for (double fraction : {0.1, 0.5}) {
    SubsetSpec plain, small, large;
    plain.fraction = small.fraction = large.fraction = fraction;
    small.val_per_class = 2;
    large.val_per_class = 5;
    const auto p = stratified_subset(labels, 10, 4, plain);
    const auto s = stratified_subset(labels, 10, 4, small);
    const auto l = stratified_subset(labels, 10, 4, large);
    EXPECT_TRUE(torch::equal(s.train, p.train)) << fraction;
    EXPECT_TRUE(torch::equal(l.train, p.train)) << fraction;
    EXPECT_TRUE(subset_of(s.val, l.val)) << fraction;
    EXPECT_FALSE(torch::isin(l.val, l.train).any().item<bool>()) << fraction;
    for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(count_class(labels, l.val, c), 5) << "class " << c;
  }
  SubsetSpec all;
  all.val_per_class = 5;
  const auto a = stratified_subset(labels, 10, 4, all);
  for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(count_class(labels, a.train, c), 20 + c - 5) << "class " << c;
  EXPECT_FALSE(torch::isin(a.val, a.train).any().item<bool>());
}
