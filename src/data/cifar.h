#pragma once
// CIFAR-10 / CIFAR-100 binary version (https://www.cs.toronto.edu/~kriz/cifar.html):
// fixed-size records of label byte(s) then 3072 pixel bytes (1024 R, 1024 G, 1024 B,
// each a row-major 32x32 plane). CIFAR-10: 1 label byte (data_batch_1..5.bin,
// test_batch.bin); CIFAR-100: coarse then fine label byte (train.bin, test.bin).
#include <string>
#include <vector>

#include "data/dataset.h"

namespace biaslab {

struct CifarLayout {
  int64_t label_bytes = 1;  ///< 1 (CIFAR-10) or 2 (CIFAR-100)
  int64_t label_index = 0;  ///< which label byte: CIFAR-100 coarse 0, fine 1
};

/// CIFAR-10 or CIFAR-100 (`format`: cifar10 | cifar100; `label_kind`: fine | coarse).
CifarLayout cifar_layout(const std::string& format, const std::string& label_kind);

/// The standard file names of a split ("train" or "test").
std::vector<std::string> cifar_default_files(const std::string& format, const std::string& split);

/// Reads and concatenates record files into uint8 (N, 3, 32, 32) images and int64
/// labels; DataError for a missing file or a size that is not a whole number of records.
Split read_cifar(const std::vector<std::string>& paths, const CifarLayout& layout);

/// Writes a split as one record file (tests, tools). `coarse` gives CIFAR-100's first
/// label byte; undefined for CIFAR-10.
void write_cifar(const std::string& path, const Split& split, const CifarLayout& layout,
                 const torch::Tensor& coarse = {});

}  // namespace biaslab
