#pragma once
// Synthetic tasks that pull the model families apart, generated deterministically:
// sample i of a split depends only on (generator_seed, split, i).
//   texture         4 classes: the orientation (0, 45, 90, 135 degrees) of a grating
//                   texture in 2-4 small round patches at random places on smoothed
//                   isotropic noise. Only local, oriented texture decides the class,
//                   wherever it is: a CNN's home ground (locality, translation
//                   equivariance).
//   same_different  2 classes: two random binary glyphs (size/6 cells a side, new for
//                   every image, random brightness) at places at least half the image
//                   apart; label 1 when they are identical (SVRT-style). Only a relation
//                   between distant parts decides the class, and no glyph can be learnt
//                   by heart: global attention's home ground.
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace biaslab {

/// Smallest image side the tasks are defined for (two glyphs half the image apart).
constexpr int64_t kMinSyntheticSize = 12;

/// Classes of a task; 0 for an unknown task.
int64_t synthetic_classes(const std::string& task);
std::vector<std::string> synthetic_class_names(const std::string& task);
const std::vector<std::string>& synthetic_tasks();

/// `n` images of `task` (uint8 (n, channels, size, size)) for split "train" or "test".
namespace detail {
/// The texture task's background blur: OpenCV's GaussianBlur (ksize 0, BORDER_REFLECT_101)
/// on doubles, without OpenCV — its Gaussian kernel of side round(8 sigma + 1) (odd), rows
/// then columns, products summed with fma so that no compiler contraction changes it. The
/// uint8 images made from it equal OpenCV's (tests/synthetic_test.cpp).
void gaussian_blur(std::vector<double>& plane, int rows, int cols, double sigma);
}  // namespace detail

Split generate_synthetic(const std::string& task, const std::string& split, int64_t n, int64_t channels,
                         int64_t size, uint64_t seed);

}  // namespace biaslab
