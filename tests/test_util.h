#pragma once
// Helpers shared by the unit tests.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <torch/nn/module.h>

namespace biaslab::dist {
class Communicator;
}

/// A check that needs a Python package this machine lacks: skipped, or a failure under
/// BIASLAB_STRICT_TESTS=1 (.ci/run), where a missing torch or torchvision is a broken
/// set-up, not a reason to pass. `reason` is streamed: BIASLAB_SKIP_OR_FAIL(py << " has no torch").
#define BIASLAB_SKIP_OR_FAIL(reason)                                                                 \
  switch (0)                                                                                        \
  case 0:                                                                                           \
  default:                                                                                          \
    if (::biaslab::test::strict()) {                                                                \
      FAIL() << reason << " (BIASLAB_STRICT_TESTS=1: required, not skipped)";                       \
    } else                                                                                          \
      GTEST_SKIP() << reason

namespace biaslab::test {

/// BIASLAB_STRICT_TESTS=1: environment skips are failures.
bool strict();

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

/// Whether a and b (any float dtypes, compared in fp32) have one shape and agree
/// elementwise within rtol and atol (torch::allclose); the failure names the largest
/// difference.
::testing::AssertionResult tensors_close(const torch::Tensor& a, const torch::Tensor& b, double rtol, double atol);

/// ||a - b|| / ||b|| (Frobenius, in fp32).
double relative_error(const torch::Tensor& a, const torch::Tensor& b);

/// Writes `text` to `path`.
void write_text(const std::filesystem::path& path, const std::string& text);

/// Runs fn(rank, communicator) on two Gloo ranks (threads of this process) joined
/// through a StoreServer; an exception on either rank is rethrown.
void on_two_ranks(const std::function<void(int rank, dist::Communicator& comm)>& fn,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace biaslab::test
