#include "data/dataset.h"

#include <filesystem>

#include "core/errors.h"
#include "core/fingerprint.h"
#include "core/opencv_support.h"
#if BIASLAB_WITH_OPENCV
#include <opencv2/imgproc.hpp>
#endif
#include "data/cifar.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/synthetic.h"
#include "data/transforms.h"
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
    } else if (c == 3 && channels == 1) {
      auto rgb = x.to(torch::kFloat);
      auto luma = rgb.select(1, 0) * 0.299 + rgb.select(1, 1) * 0.587 + rgb.select(1, 2) * 0.114;
      x = luma.round_().clamp_(0, 255).to(torch::kUInt8).unsqueeze(1);
    } else {
      throw DataError(source + ": images have " + std::to_string(c) + " channel(s), data.channels is " +
                      std::to_string(channels) + " (only 1 <-> 3 conversions are supported)");
    }
  }
  const int64_t h = x.size(2), w = x.size(3);
  if (h == size && w == size) return x.contiguous();
  // Resize once at load time, per image and channel, with OpenCV.
#if !BIASLAB_WITH_OPENCV
  refuse_without_opencv(source + ": resizing its " + std::to_string(h) + "x" + std::to_string(w) +
                        " images to data.image_size " + std::to_string(size));
#else
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
#endif
}

namespace {

void check_labels(const Split& s, int64_t num_classes, const std::string& source) {
  if (s.size() == 0) throw DataError(source + ": holds no samples");
  const int64_t min_label = s.labels.min().item<int64_t>();
  if (min_label < 0) throw DataError(source + ": negative label " + std::to_string(min_label));
  const int64_t max_label = s.labels.max().item<int64_t>();
  if (max_label >= num_classes)
    throw DataError(source + ": label " + std::to_string(max_label) + " is out of range for data.num_classes = " +
                    std::to_string(num_classes));
}

Split take(const Split& s, const torch::Tensor& idx) {
  return {s.images.index_select(0, idx), s.labels.index_select(0, idx)};
}

Split read_idx_split(const DataConfig& cfg, const std::string& images_name, const std::string& labels_name) {
  const std::string images_path = (fs::path(cfg.root) / images_name).string();
  const std::string labels_path = (fs::path(cfg.root) / labels_name).string();
  Split s{read_idx_images(images_path), read_idx_labels(labels_path)};
  if (s.images.size(0) != s.labels.size(0))
    throw DataError(images_path + " holds " + std::to_string(s.images.size(0)) + " images but " + labels_path +
                    " holds " + std::to_string(s.labels.size(0)) + " labels");
  check_labels(s, cfg.num_classes, labels_path);
  s.images = conform_images(s.images, cfg.channels, cfg.image_size, images_path);
  return s;
}

Source read_idx(const DataConfig& cfg) {
  Source src;
  src.train = read_idx_split(cfg, cfg.train_images, cfg.train_labels);
  src.test = read_idx_split(cfg, cfg.test_images, cfg.test_labels);
  src.train_name = (fs::path(cfg.root) / cfg.train_images).string();
  return src;
}

Split read_cifar_split(const DataConfig& cfg, const std::string& split) {
  const auto& listed = split == "train" ? cfg.train_files : cfg.test_files;
  const auto names = listed.empty() ? cifar_default_files(cfg.format, split) : listed;
  std::vector<std::string> paths;
  for (const auto& n : names) paths.push_back((fs::path(cfg.root) / n).string());
  Split s = read_cifar(paths, cifar_layout(cfg.format, cfg.label_kind));
  check_labels(s, cfg.num_classes, paths.size() == 1 ? paths[0] : cfg.root + " (" + split + " files)");
  s.images = conform_images(s.images, cfg.channels, cfg.image_size, paths[0]);
  return s;
}

Source read_folder(const DataConfig& cfg) {
  FolderReadOptions o;
  o.channels = cfg.channels;
  o.image_size = cfg.image_size;
  o.skip_bad = cfg.on_bad_image == "skip";
  const fs::path root(cfg.root);
  Source src;
  auto read = [&](const fs::path& dir, Split& into) {
    FolderSplit f = read_image_folder(dir.string(), o);
    if (src.class_names.empty()) {
      src.class_names = f.class_names;
    } else if (f.class_names != src.class_names) {
      throw DataError(dir.string() + ": class folders differ from " + (root / "train").string() +
                      "'s; every split needs the same class folders");
    }
    src.skipped.insert(src.skipped.end(), f.skipped.begin(), f.skipped.end());
    into = std::move(f.split);
  };
  const bool split_folders = fs::is_directory(root / "train");
  if (split_folders) {
    read(root / "train", src.train);
    src.train_name = (root / "train").string();
    if (!fs::is_directory(root / "test"))
      throw DataError(root.string() + ": has train/ but no test/ folder (give both, or neither and let "
                      "data.test_holdout carve the test split)");
    read(root / "test", src.test);
    if (fs::is_directory(root / "val")) read(root / "val", src.val);
  } else {
    Split all;
    read(root, all);
    src.train_name = root.string();
    // No test/ folder: a stratified share, drawn once from a stream of its own.
    SubsetSpec holdout;
    holdout.val_fraction = cfg.test_holdout;
    auto sub = stratified_subset(all.labels, int64_t(src.class_names.size()), 0x686f6c646f7574ULL, holdout);
    if (sub.val.numel() == 0) throw DataError(root.string() + ": too few images to hold out a test split");
    src.test = take(all, sub.val);
    src.train = take(all, sub.train);
  }
  if (int64_t(src.class_names.size()) != cfg.num_classes)
    throw DataError(src.train_name + ": " + std::to_string(src.class_names.size()) +
                    " class folders, but data.num_classes is " + std::to_string(cfg.num_classes));
  return src;
}

}  // namespace

Source read_source(const DataConfig& cfg) {
  if (cfg.format == "synthetic") {
    Source src;
    const auto seed = uint64_t(cfg.generator_seed);
    src.train = generate_synthetic(cfg.task, "train", cfg.train_size, cfg.channels, cfg.image_size, seed);
    src.test = generate_synthetic(cfg.task, "test", cfg.test_size, cfg.channels, cfg.image_size, seed);
    src.class_names = synthetic_class_names(cfg.task);
    src.train_name = "synthetic task '" + cfg.task + "'";
    return src;
  }
  if (!fs::is_directory(cfg.root))
    throw DataError("data.root " + cfg.root + " is not a folder" +
                    (cfg.preset == "fashion_mnist" ? " (install the dataset-fashion-mnist package)" : ""));
  if (cfg.format == "idx") return read_idx(cfg);
  if (cfg.format == "cifar10" || cfg.format == "cifar100") {
    Source src;
    src.train = read_cifar_split(cfg, "train");
    src.test = read_cifar_split(cfg, "test");
    src.train_name = cfg.root;
    return src;
  }
  if (cfg.format == "folder") return read_folder(cfg);
  throw DataError("data.format '" + cfg.format + "' is not supported");
}

namespace {
std::string subset_fingerprint(const SubsetIndices& sub) {
  Fingerprint f;
  for (const torch::Tensor& indices : {sub.train, sub.val}) {
    const torch::Tensor t = indices.to(torch::kLong).contiguous();
    const int64_t n = t.numel();
    f.feed(&n, sizeof n);  // the split's length first: train [a, b] + val [c] differs from train [a] + val [b, c]
    f.feed(t.data_ptr(), size_t(n) * sizeof(int64_t));
  }
  return f.hex();
}
}  // namespace

Dataset load_dataset(const DataConfig& cfg) {
  Dataset ds;
  Source src = read_source(cfg);
  Split& full_train = src.train;
  Split& full_test = src.test;
  const std::string holdout = cfg.val_per_class > 0 ? "data.val_per_class = " + std::to_string(cfg.val_per_class)
                                                    : "data.val_fraction = " + std::to_string(cfg.val_fraction);
  if (src.val.size() > 0 && cfg.has_val_split())
    throw DataError(cfg.root + ": has a val/ folder and " + holdout +
                    "; use one validation split (set data.val_fraction and data.val_per_class to 0 to use the folder)");

  SubsetSpec spec;
  spec.val_fraction = cfg.val_fraction;
  spec.val_per_class = cfg.val_per_class;
  spec.fraction = cfg.train_fraction;
  spec.per_class = cfg.train_per_class;
  auto sub = stratified_subset(full_train.labels, cfg.num_classes, uint64_t(cfg.subset_seed), spec);
  const std::string& train_file = src.train_name;
  if (sub.train.numel() == 0)
    throw DataError(train_file + ": no training images left after holding out " + holdout + " of " +
                    std::to_string(full_train.size()));
  if (cfg.has_val_split() && sub.val.numel() == 0)
    throw DataError(train_file + ": data.val_fraction = " + std::to_string(cfg.val_fraction) + " of " +
                    std::to_string(full_train.size()) + " images rounds to an empty validation split");
  ds.subset_fingerprint = subset_fingerprint(sub);
  ds.train = take(full_train, sub.train);
  if (sub.val.numel() > 0) ds.val = take(full_train, sub.val);
  if (src.val.size() > 0) ds.val = src.val;

  if (cfg.test_fraction < 1.0) {
    SubsetSpec test_spec;
    test_spec.fraction = cfg.test_fraction;
    ds.test = take(full_test, stratified_subset(full_test.labels, cfg.num_classes, uint64_t(cfg.subset_seed),
                                                test_spec).train);
  } else {
    ds.test = full_test;
  }
  ds.class_names = cfg.class_names.empty() ? src.class_names : cfg.class_names;
  ds.skipped = std::move(src.skipped);
  if (cfg.mean.empty()) {
    std::tie(ds.mean, ds.std) = channel_stats(ds.train.images);
    for (auto& s : ds.std) s = std::max(s, 1e-3);  // a constant channel would divide by zero
  } else {
    ds.mean = cfg.mean;
    ds.std = cfg.std;
  }
  if (ds.class_names.empty()) ds.class_names = index_class_names(cfg.num_classes);
  return ds;
}

std::vector<std::string> index_class_names(int64_t num_classes) {
  std::vector<std::string> names;
  for (int64_t c = 0; c < num_classes; ++c) names.push_back(std::to_string(c));
  return names;
}

}  // namespace biaslab
