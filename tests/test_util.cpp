#include "test_util.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <torch/torch.h>

namespace biaslab::test {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "biaslab_test_XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace biaslab::test

namespace biaslab::test {

void copy_shared_parameters(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto source = from.named_parameters();
  for (auto& p : to.named_parameters())
    if (const auto* s = source.find(p.key())) p.value().copy_(*s);
}

}  // namespace biaslab::test
