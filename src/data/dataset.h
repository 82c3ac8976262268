#pragma once
// In-memory image classification datasets: uint8 images (N, C, H, W) and int64 labels.
#include <torch/types.h>

#include <string>
#include <vector>

#include "config/config.h"

namespace biaslab {

struct Split {
  torch::Tensor images;  ///< uint8 (N, C, H, W)
  torch::Tensor labels;  ///< int64 (N)
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct Dataset {
  Split train;
  Split val;   ///< empty unless data.val_fraction > 0
  Split test;
  std::vector<std::string> class_names;
};

/// Loads the files `cfg` names, converts channels, resizes to cfg.image_size, checks
/// labels against cfg.num_classes, and draws the stratified val / train / test subsets.
/// Throws DataError naming the file for anything wrong with the data.
Dataset load_dataset(const DataConfig& cfg);

/// Brings a uint8 (N, C, H, W) tensor to `channels` (1 -> 3 by replication) and to
/// size x size (OpenCV area / linear interpolation). `source` names the data in errors.
torch::Tensor conform_images(const torch::Tensor& images, int64_t channels, int64_t size,
                             const std::string& source);

}  // namespace biaslab
