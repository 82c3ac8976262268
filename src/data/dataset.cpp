#include "data/dataset.h"

#include <opencv2/imgproc.hpp>

#include <filesystem>

#include "core/errors.h"
#include "data/idx.h"
#include "data/subset.h"

namespace biaslab {
namespace fs = std::filesystem;

torch::Tensor conform_images(const torch::Tensor& images, int64_t channels, int64_t size,
                             const std::string& source) {
  torch::Tensor x = images;
  const int64_t c = x.size(1);
  if (c != channels) {
    if (c == 1 && channels == 3) {
      x = x.expand({-1, 3, -1, -1});
    } else {
      throw DataError(source + ": images have " + std::to_string(c) + " channel(s), data.channels is " +
                      std::to_string(channels) + " (only 1 -> 3 conversion is supported)");
    }
  }
  const int64_t h = x.size(2), w = x.size(3);
  if (h == size && w == size) return x.contiguous();
  // Resize once at load time, per image and channel, with OpenCV.
  auto src = x.contiguous();
  auto out = torch::empty({src.size(0), channels, size, size}, torch::kUInt8);
  const int interp = (size < h || size < w) ? cv::INTER_AREA : cv::INTER_LINEAR;
  for (int64_t i = 0; i < src.size(0); ++i) {
    for (int64_t ch = 0; ch < channels; ++ch) {
      cv::Mat in(static_cast<int>(h), static_cast<int>(w), CV_8UC1, src[i][ch].data_ptr<uint8_t>());
      cv::Mat dst(static_cast<int>(size), static_cast<int>(size), CV_8UC1, out[i][ch].data_ptr<uint8_t>());
      cv::resize(in, dst, dst.size(), 0, 0, interp);
    }
  }
  return out;
}

namespace {

Split read_idx_split(const DataConfig& cfg, const std::string& images_name, const std::string& labels_name) {
  const std::string images_path = (fs::path(cfg.root) / images_name).string();
  const std::string labels_path = (fs::path(cfg.root) / labels_name).string();
  Split s{read_idx_images(images_path), read_idx_labels(labels_path)};
  if (s.images.size(0) != s.labels.size(0))
    throw DataError(images_path + " holds " + std::to_string(s.images.size(0)) + " images but " + labels_path +
                    " holds " + std::to_string(s.labels.size(0)) + " labels");
  const int64_t max_label = s.labels.max().item<int64_t>();
  if (max_label >= cfg.num_classes)
    throw DataError(labels_path + ": label " + std::to_string(max_label) + " is out of range for data.num_classes = " +
                    std::to_string(cfg.num_classes));
  s.images = conform_images(s.images, cfg.channels, cfg.image_size, images_path);
  return s;
}

Split take(const Split& s, const torch::Tensor& idx) {
  return {s.images.index_select(0, idx), s.labels.index_select(0, idx)};
}

}  // namespace

Dataset load_dataset(const DataConfig& cfg) {
  if (cfg.format != "idx") throw DataError("data.format '" + cfg.format + "' is not supported");
  if (!fs::is_directory(cfg.root))
    throw DataError("data.root " + cfg.root + " is not a folder" +
                    (cfg.preset == "fashion_mnist" ? " (install the dataset-fashion-mnist package)" : ""));
  Dataset ds;
  Split full_train = read_idx_split(cfg, cfg.train_images, cfg.train_labels);
  Split full_test = read_idx_split(cfg, cfg.test_images, cfg.test_labels);

  SubsetSpec spec;
  spec.val_fraction = cfg.val_fraction;
  spec.fraction = cfg.train_fraction;
  spec.per_class = cfg.train_per_class;
  auto sub = stratified_subset(full_train.labels, cfg.num_classes, uint64_t(cfg.subset_seed), spec);
  const std::string train_file = (fs::path(cfg.root) / cfg.train_images).string();
  if (sub.train.numel() == 0)
    throw DataError(train_file + ": no training images left after holding out data.val_fraction = " +
                    std::to_string(cfg.val_fraction) + " of " + std::to_string(full_train.size()));
  if (cfg.val_fraction > 0 && sub.val.numel() == 0)
    throw DataError(train_file + ": data.val_fraction = " + std::to_string(cfg.val_fraction) + " of " +
                    std::to_string(full_train.size()) + " images rounds to an empty validation split");
  ds.train = take(full_train, sub.train);
  if (sub.val.numel() > 0) ds.val = take(full_train, sub.val);

  if (cfg.test_fraction < 1.0) {
    SubsetSpec test_spec;
    test_spec.fraction = cfg.test_fraction;
    ds.test = take(full_test, stratified_subset(full_test.labels, cfg.num_classes, uint64_t(cfg.subset_seed),
                                                test_spec).train);
  } else {
    ds.test = full_test;
  }
  ds.class_names = cfg.class_names;
  if (ds.class_names.empty())
    for (int64_t c = 0; c < cfg.num_classes; ++c) ds.class_names.push_back(std::to_string(c));
  return ds;
}

}  // namespace biaslab
