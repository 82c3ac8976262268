#include "test_util.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <future>
#include <stdexcept>
#include <torch/torch.h>

#include "distributed/communicator.h"

namespace biaslab::test {

bool strict() {
  const char* v = std::getenv("BIASLAB_STRICT_TESTS");
  return v != nullptr && std::string(v) == "1";
}

::testing::AssertionResult tensors_close(const torch::Tensor& a_in, const torch::Tensor& b_in, double rtol,
                                         double atol) {
  const auto a = a_in.to(torch::kFloat), b = b_in.to(torch::kFloat);
  if (a.sizes() != b.sizes()) return ::testing::AssertionFailure() << "sizes " << a.sizes() << " vs " << b.sizes();
  if (torch::allclose(a, b, rtol, atol)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max diff " << (a - b).abs().max().item<double>();
}

double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  const auto bf = b.to(torch::kFloat);
  return (a.to(torch::kFloat) - bf).norm().item<double>() / std::max(bf.norm().item<double>(), 1e-30);
}

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

void on_two_ranks(const std::function<void(int rank, dist::Communicator& comm)>& fn,
                  std::chrono::milliseconds timeout) {
  dist::StoreServer store(2, timeout);
  auto run = [&](int rank) {
    dist::DistEnv env;
    env.rank = rank;
    env.world_size = 2;
    env.local_rank = rank;
    env.local_world_size = 2;
    env.master_addr = "127.0.0.1";
    env.master_port = store.port();
    env.launcher_store = true;
    auto comm = dist::Communicator::join(env, "gloo", c10::Device(c10::kCPU), timeout);
    fn(rank, *comm);
  };
  auto other = std::async(std::launch::async, run, 1);
  run(0);
  other.get();
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
