#include "data/image_folder.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "core/opencv_support.h"
#if BIASLAB_WITH_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include <algorithm>
#include <filesystem>

#include "core/errors.h"
#include "core/input_file.h"

namespace biaslab {
namespace fs = std::filesystem;

namespace {

int digits(int64_t n) {
  int d = 1;
  while (n >= 10) {
    n /= 10;
    ++d;
  }
  return d;
}

std::string zero_pad(int64_t v, int width) {
  std::string s = std::to_string(v);
  return std::string(size_t(std::max<int>(0, width - int(s.size()))), '0') + s;
}

}  // namespace

bool decode_image(const std::string& path, const FolderReadOptions& o, torch::Tensor out) {
  // A FIFO would block OpenCV's reader: only regular files are opened (missing ones are undecodable).
  if (const std::string problem = input_file_problem(path); !problem.empty() && problem != "does not exist")
    throw DataError(path + ": " + problem + "; an image must be a regular file");
#if !BIASLAB_WITH_OPENCV
  refuse_without_opencv("decoding image files (" + path + ")");
#else
  try {
    cv::Mat img = cv::imread(path, o.channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
    if (img.empty()) return false;
    if (o.channels == 3) cv::cvtColor(img, img, cv::COLOR_BGR2RGB);
    if (img.rows != o.image_size || img.cols != o.image_size) {
      const int interp = (o.image_size < img.rows || o.image_size < img.cols) ? cv::INTER_AREA : cv::INTER_LINEAR;
      cv::resize(img, img, cv::Size(int(o.image_size), int(o.image_size)), 0, 0, interp);
    }
    if (!img.isContinuous()) img = img.clone();
    // HWC -> CHW
    auto hwc = torch::from_blob(img.data, {o.image_size, o.image_size, o.channels}, torch::kUInt8);
    out.copy_(hwc.permute({2, 0, 1}));
    return true;
  } catch (const cv::Exception&) {
    return false;
  }
#endif
}

std::string class_folder_name(int64_t label, int64_t num_classes, const std::string& name) {
  std::string clean;
  for (char c : name) clean += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return zero_pad(label, digits(num_classes - 1)) + (clean.empty() ? "" : "_" + clean);
}

FolderSplit read_image_folder(const std::string& root, const FolderReadOptions& o) {
  if (!kWithOpenCV) refuse_without_opencv("reading an image folder (" + root + ")");
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw DataError(root + ": folder does not exist");
  FolderSplit out;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory() && e.path().filename().string()[0] != '.') out.class_names.push_back(e.path().filename().string());
  if (ec) throw DataError(root + ": cannot list (" + ec.message() + ")");
  std::sort(out.class_names.begin(), out.class_names.end());
  for (const auto& name : out.class_names)  // class names end up in JSON (meta, exports)
    if (const std::string problem = text_problem(name); !problem.empty())
      throw DataError((fs::path(root) / name).string() + ": a class folder's name holds " + problem +
                      "; rename the folder");
  if (out.class_names.empty())
    throw DataError(root + ": no class folders (expected root/<class>/<image>, one folder per class)");

  struct Item {
    std::string name, path;
    int64_t label;
  };
  std::vector<Item> items;
  for (size_t c = 0; c < out.class_names.size(); ++c) {
    const fs::path dir = fs::path(root) / out.class_names[c];
    size_t before = items.size();
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name[0] == '.') continue;
      items.push_back({name, e.path().string(), int64_t(c)});
    }
    if (items.size() == before) throw DataError(dir.string() + ": empty class folder (no image files)");
  }
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.name != b.name ? a.name < b.name : a.label < b.label; });

  const auto n = static_cast<int64_t>(items.size());
  auto images = torch::empty({n, o.channels, o.image_size, o.image_size}, torch::kUInt8);
  std::vector<char> ok(size_t(n), 0);
  at::parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) ok[size_t(i)] = decode_image(items[size_t(i)].path, o, images[i]);
  });
  std::vector<int64_t> keep, labels;
  for (int64_t i = 0; i < n; ++i) {
    if (ok[size_t(i)]) {
      keep.push_back(i);
      labels.push_back(items[size_t(i)].label);
    } else if (o.skip_bad) {
      out.skipped.push_back(items[size_t(i)].path);
    } else {
      throw DataError(items[size_t(i)].path +
                      ": OpenCV cannot decode this image (set data.on_bad_image: skip to leave such files out)");
    }
  }
  if (keep.empty()) throw DataError(root + ": none of the " + std::to_string(n) + " files could be decoded");
  auto idx = torch::tensor(keep, torch::kLong);
  out.split.images = keep.size() == size_t(n) ? images : images.index_select(0, idx);
  out.split.labels = torch::tensor(labels, torch::kLong);
  // A class whose every image was skipped is as unusable as an empty folder.
  auto counts = torch::bincount(out.split.labels, {}, int64_t(out.class_names.size()));
  for (size_t c = 0; c < out.class_names.size(); ++c)
    if (counts[int64_t(c)].item<int64_t>() == 0)
      throw DataError((fs::path(root) / out.class_names[c]).string() + ": no decodable image left in this class");
  return out;
}

void write_image_folder(const std::string& root, const Split& split, const std::vector<std::string>& class_names) {
#if !BIASLAB_WITH_OPENCV
  refuse_without_opencv("writing an image folder (" + root + ")");
#else
  const int64_t n = split.size(), classes = int64_t(class_names.size());
  std::vector<fs::path> dirs;
  for (int64_t c = 0; c < classes; ++c) {
    dirs.push_back(fs::path(root) / class_folder_name(c, classes, class_names[size_t(c)]));
    fs::create_directories(dirs.back());
  }
  const auto images = split.images.contiguous();
  const auto labels = split.labels.contiguous();
  const int width = std::max(6, digits(n - 1));
  at::parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      auto hwc = images[i].permute({1, 2, 0}).contiguous();
      const int ch = int(hwc.size(2));
      cv::Mat img(int(hwc.size(0)), int(hwc.size(1)), ch == 1 ? CV_8UC1 : CV_8UC3, hwc.data_ptr<uint8_t>());
      cv::Mat bgr;
      if (ch == 3) cv::cvtColor(img, bgr, cv::COLOR_RGB2BGR);
      const auto path = dirs[size_t(labels[i].item<int64_t>())] / (zero_pad(i, width) + ".png");
      if (!cv::imwrite(path.string(), ch == 3 ? bgr : img)) throw DataError(path.string() + ": cannot write");
    }
  });
#endif
}

}  // namespace biaslab
