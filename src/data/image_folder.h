#pragma once
// Image folders: root/<class>/<image>, one sub-folder per class (class names are the
// folder names in sorted order, labels their positions), any format OpenCV decodes.
// Samples are ordered by file name, then class, so a folder written by
// write_image_folder (files named by their index) reads back in its original order.
#include <string>
#include <vector>

#include "data/dataset.h"

namespace biaslab {

struct FolderReadOptions {
  int64_t channels = 3;      ///< 1: greyscale; 3: RGB (OpenCV's BGR converted)
  int64_t image_size = 32;   ///< every image is resized to size x size
  bool skip_bad = false;     ///< undecodable files: skip (listed in `skipped`) or DataError
};

struct FolderSplit {
  Split split;
  std::vector<std::string> class_names;
  std::vector<std::string> skipped;  ///< files that could not be decoded (skip_bad only)
};

/// Reads one split folder. DataError for a missing folder, no class folders, an empty
/// class folder, or (without skip_bad) an image OpenCV cannot decode.
FolderSplit read_image_folder(const std::string& root, const FolderReadOptions& options);

/// Decodes `path` into `out` (uint8, (channels, size, size)) as the folder reader does:
/// OpenCV decode, greyscale or RGB, INTER_AREA when shrinking and INTER_LINEAR when
/// enlarging to image_size. False for anything OpenCV cannot decode or convert.
/// A path that exists but is not a regular file (FIFO, device, folder) is a DataError.
bool decode_image(const std::string& path, const FolderReadOptions& options, torch::Tensor out);

/// Writes a split as root/<NN_class>/<index>.png (PNG: lossless), creating folders.
/// Class folders get a zero-padded label prefix so that their sorted order is the label
/// order; file names are the sample indices, zero-padded.
void write_image_folder(const std::string& root, const Split& split, const std::vector<std::string>& class_names);

/// The folder name write_image_folder uses for class `label`.
std::string class_folder_name(int64_t label, int64_t num_classes, const std::string& name);

}  // namespace biaslab
