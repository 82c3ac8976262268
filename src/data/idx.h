#pragma once
// IDX files (MNIST, Fashion-MNIST): http://yann.lecun.com/exdb/mnist/ format,
// gzip-compressed or plain (zlib reads both).
#include <torch/types.h>

#include <string>

namespace biaslab {

/// Reads an IDX image file (magic 0x00000803) into a uint8 tensor (N, 1, H, W).
/// Throws DataError naming the file for a missing, truncated or malformed file.
torch::Tensor read_idx_images(const std::string& path);

/// Reads an IDX label file (magic 0x00000801) into an int64 tensor (N).
torch::Tensor read_idx_labels(const std::string& path);

/// Writes tensors in IDX format (uncompressed, or gzip when the name ends in .gz).
/// Used by tests and by tools that produce small datasets.
void write_idx_images(const std::string& path, const torch::Tensor& images);
void write_idx_labels(const std::string& path, const torch::Tensor& labels);

}  // namespace biaslab
