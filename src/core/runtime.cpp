#include "core/runtime.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>
#if defined(__linux__)
#include <dlfcn.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/errors.h"

#include <spdlog/spdlog.h>

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
  static bool warned = false;
  if (n > 1 && !warned && blas_uses_pthreads()) {
    warned = true;
    spdlog::warn("{} is the pthreads build: its threads compete with LibTorch's OpenMP threads, which slows fp32 "
                 "matrix products (transformers trained up to 1.9x slower, docs/performance.md); install "
                 "libopenblas0-openmp and rebuild biaslab (scripts/setup.sh does both)",
                 blas_info());
  }
  return at::get_num_threads();
}

std::string blas_info() {
#if defined(__linux__)
  // Looked up at run time: LibTorch links its BLAS itself, biaslab does not.
  using config_fn = char* (*)();
  using parallel_fn = int (*)();
  auto config = reinterpret_cast<config_fn>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  auto parallel = reinterpret_cast<parallel_fn>(dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  if (!config || !parallel) return "";
  std::string text = config();  // e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"
  const auto second_space = text.find(' ', text.find(' ') + 1);
  const std::string name = text.substr(0, second_space);
  const int mode = parallel();  // 0 sequential, 1 pthreads, 2 OpenMP
  return name + (mode == 2 ? " (OpenMP)" : mode == 1 ? " (pthreads)" : " (sequential)");
#else
  return "";
#endif
}

bool blas_uses_pthreads() {
  const std::string info = blas_info();
  return info.size() > 11 && info.compare(info.size() - 11, 11, "(pthreads)") == 0;
}

namespace {
std::atomic<KernelMode> g_kernel_mode{KernelMode::Auto};
}  // namespace

void set_kernel_mode(const std::string& mode) {
  if (mode == "auto") g_kernel_mode = KernelMode::Auto;
  else if (mode == "fused") g_kernel_mode = KernelMode::Fused;
  else if (mode == "reference") g_kernel_mode = KernelMode::Reference;
  else throw ConfigError("runtime.kernels: '" + mode + "' is not a kernel choice; expected auto, fused or reference");
}

void set_kernel_mode(KernelMode mode) { g_kernel_mode = mode; }

KernelMode kernel_mode() { return g_kernel_mode.load(); }

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
