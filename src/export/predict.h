#pragma once
// `biaslab predict`: classify image files with an exported archive (export/archive.h),
// preprocessed exactly as evaluation does: OpenCV decode to the archive's channels,
// resize to its image size (INTER_AREA shrinking, INTER_LINEAR enlarging), scale to
// [0, 1], normalise with its mean and std.
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace biaslab {

struct PredictRequest {
  std::string model;                ///< archive written by `biaslab export`
  std::vector<std::string> inputs;  ///< image files and folders (searched recursively)
  int64_t topk = 5;
  int64_t batch_size = 256;
};

struct Prediction {
  std::string file;
  std::vector<std::pair<int64_t, double>> top;  ///< (class, probability), most likely first
  int64_t label = -1;  ///< the class its folder names (see predict()), or -1
};

struct PredictResult {
  std::vector<std::string> class_names;
  std::vector<Prediction> items;   ///< in input order; folders' files sorted by path
  int64_t labelled = 0;            ///< items with a label from their folder
  int64_t correct = 0;             ///< labelled items whose top class is the label
  nlohmann::json meta;             ///< the archive's biaslab/meta.json
};

/// Image files a list of files and folders names: files as given, folders' image files
/// (png, jpg, jpeg, bmp, pgm, ppm, pbm, tif, tiff, webp) recursively, sorted. DataError for
/// a path that does not exist or a folder without images.
std::vector<std::string> collect_images(const std::vector<std::string>& inputs);

/// Classifies every image. An image's label is known when its parent folder is named
/// after a class: the class name itself, or `biaslab data export`'s "NN_name". DataError
/// for an image OpenCV cannot decode; CheckpointError for a file that is not an archive.
PredictResult predict(const PredictRequest& req);

}  // namespace biaslab
