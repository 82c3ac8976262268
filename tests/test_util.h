#pragma once
// Helpers shared by the unit tests.
#include <filesystem>
#include <string>

#include <torch/nn/module.h>

namespace biaslab::test {

/// A fresh empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// Copies every parameter `from` shares by name with `to` (the rest of `to` is kept).
void copy_shared_parameters(const torch::nn::Module& from, torch::nn::Module& to);

/// Writes `text` to `path`.
void write_text(const std::filesystem::path& path, const std::string& text);

}  // namespace biaslab::test
