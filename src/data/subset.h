#pragma once
// Stratified, nested subsets: the data-size axis.
//
// Each class's indices are permuted once with a generator seeded by `seed`; a subset
// takes a prefix of every class's permutation. For one seed a smaller subset is
// therefore always contained in a larger one, so curves over sizes compare like with like.
#include <torch/types.h>

#include <cstdint>

namespace biaslab {

struct SubsetSpec {
  double val_fraction = 0.0;    ///< share of each class held out first (validation)
  double fraction = 1.0;        ///< share of each class's remaining images kept
  int64_t per_class = 0;        ///< when > 0, keep this many per class instead
  /// When > 0 (val_fraction 0): this many of each class for validation, from the END of the
  /// class's permutation; the training subset is then taken from the whole class, exactly as
  /// without validation (a share or count of all n), and must leave room for it.
  int64_t val_per_class = 0;
};

struct SubsetIndices {
  torch::Tensor train;  ///< int64 indices, sorted
  torch::Tensor val;    ///< int64 indices, sorted (may be empty)
};

/// `labels`: int64 (N) with values in [0, num_classes).
SubsetIndices stratified_subset(const torch::Tensor& labels, int64_t num_classes, uint64_t seed,
                                const SubsetSpec& spec);

}  // namespace biaslab
