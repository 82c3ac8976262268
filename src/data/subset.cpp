#include "data/subset.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>

namespace biaslab {

SubsetIndices stratified_subset(const torch::Tensor& labels, int64_t num_classes, uint64_t seed,
                                const SubsetSpec& spec) {
  TORCH_CHECK(labels.dim() == 1, "stratified_subset: labels must be 1-D, got ", labels.sizes());
  TORCH_CHECK(spec.fraction > 0.0 && spec.fraction <= 1.0, "fraction must be in (0, 1], got ", spec.fraction);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<torch::Tensor> train_parts, val_parts;
  for (int64_t c = 0; c < num_classes; ++c) {
    auto idx = torch::nonzero(labels == c).flatten();
    const int64_t n = idx.size(0);
    if (n == 0) continue;
    // Class c's permutation depends only on (seed, c, n): one draw per class, in class order.
    auto order = idx.index_select(0, torch::randperm(n, gen, torch::kLong));
    const bool tail = spec.val_per_class > 0;
    const int64_t n_val = tail ? std::min(spec.val_per_class, n)
                               : static_cast<int64_t>(std::llround(spec.val_fraction * double(n)));
    // A head holdout (val_fraction) leaves the rest as the pool; a tail one (val_per_class)
    // draws the training prefix from the whole class and then leaves out what validation took.
    // `room` is what validation leaves for training either way.
    const int64_t pool = tail ? n : n - n_val, room = n - n_val;
    int64_t n_train = spec.per_class > 0 ? std::min(spec.per_class, pool)
                                         : static_cast<int64_t>(std::ceil(spec.fraction * double(pool) - 1e-9));
    n_train = std::max<int64_t>(std::min(n_train, room), room > 0 ? 1 : 0);
    val_parts.push_back(order.narrow(0, tail ? n - n_val : 0, n_val));
    train_parts.push_back(order.narrow(0, tail ? 0 : n_val, n_train));
  }
  auto sorted = [](std::vector<torch::Tensor>& parts) {
    if (parts.empty()) return torch::empty({0}, torch::kLong);
    return std::get<0>(torch::cat(parts).sort());
  };
  return {sorted(train_parts), sorted(val_parts)};
}

}  // namespace biaslab
