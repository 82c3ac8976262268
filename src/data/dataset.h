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
  Split val;   ///< empty unless data.val_fraction or data.val_per_class > 0 (or a val/ folder)
  Split test;
  std::vector<std::string> class_names;
  std::vector<std::string> skipped;  ///< undecodable images left out (data.on_bad_image: skip)
  std::vector<double> mean, std;     ///< normalisation: data.mean/std, or computed from `train`
  /// Which images the subsets took: a fingerprint of the training indices, then the
  /// validation indices, into the stored training split (summary.json data.subset_fingerprint).
  /// Equal for runs that trained (and selected) on the same images, whatever their seeds.
  std::string subset_fingerprint;
};

/// A dataset as stored, before any subset: what the format readers return, with images
/// already at data.channels and data.image_size.
struct Source {
  Split train;
  Split val;   ///< a folder's val/ split; empty otherwise
  Split test;
  std::vector<std::string> class_names;  ///< from the data (folder names, task names); may be empty
  std::string train_name;                ///< file or folder, for messages
  std::vector<std::string> skipped;      ///< undecodable images left out (data.on_bad_image: skip)
};

/// Reads every split of the dataset `cfg` describes (idx, cifar10/100, folder,
/// synthetic). Throws DataError naming the file for anything wrong with the data.
Source read_source(const DataConfig& cfg);

/// "0", "1", ...: the class names of a dataset that has none.
std::vector<std::string> index_class_names(int64_t num_classes);

/// read_source, then the stratified val / train / test subsets of `cfg`.
Dataset load_dataset(const DataConfig& cfg);

/// Brings a uint8 (N, C, H, W) tensor to `channels` (1 -> 3 by replication, 3 -> 1 by
/// ITU-R 601 luma) and to
/// size x size (OpenCV area / linear interpolation). `source` names the data in errors.
torch::Tensor conform_images(const torch::Tensor& images, int64_t channels, int64_t size,
                             const std::string& source);

}  // namespace biaslab
