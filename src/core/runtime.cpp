#include "core/runtime.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/errors.h"

namespace biaslab {

void tune_allocator() {
#if defined(__GLIBC__)
  const char* mode = std::getenv("BIASLAB_MALLOC");
  if (mode && std::strcmp(mode, "system") == 0) return;
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

int set_threads(int threads, int processes) {
  int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()) / std::max(processes, 1);
  if (n < 1) n = 1;
  at::set_num_threads(n);
  return at::get_num_threads();
}

void seed_everything(uint64_t seed) {
  torch::manual_seed(seed);  // also seeds every CUDA device when CUDA is available
}

c10::Device select_device(const std::string& spec, const std::string& key) {
  if (spec == "auto") {
    return torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  }
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec == "cuda" || spec.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (spec.size() > 5) {
      const std::string digits = spec.substr(5);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        throw ConfigError(key + ": '" + spec + "' is not a device; expected auto, cpu, cuda or cuda:N");
      index = std::stoi(digits);
    }
    if (!torch::cuda::is_available())
      throw ConfigError(key + ": '" + spec +
                        "' asked for CUDA, but this LibTorch build or machine has no CUDA device; "
                        "use 'cpu' or 'auto'");
    if (index >= static_cast<int>(torch::cuda::device_count()))
      throw ConfigError(key + ": '" + spec + "' but only " +
                        std::to_string(torch::cuda::device_count()) + " CUDA device(s) exist");
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw ConfigError(key + ": '" + spec + "' is not a device; expected auto, cpu, cuda or cuda:N");
}

at::Tensor to_device(const at::Tensor& host, const c10::Device& device) {
  if (device.is_cpu()) return host.device().is_cpu() ? host : host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace biaslab
