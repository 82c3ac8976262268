#pragma once
// Process-wide runtime settings: threads, seeding, device selection.
#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace biaslab {

/// Keeps freed memory in the process instead of returning it to the kernel (glibc: no
/// mmap'd chunks, no heap trimming). LibTorch's CPU allocator frees every activation
/// after use; batches of tens of MB then cost an mmap, page faults and munmap each time
/// (at evaluation batch 512 the ViT-hybrid ran at 40% of the speed; docs/performance.md).
/// Call first thing in main(); BIASLAB_MALLOC=system leaves glibc's defaults.
void tune_allocator();

/// Sets the intra-op thread count; 0 means all cores, shared by the `processes` of a
/// distributed job on this node (at least one each). Returns the count in effect.
int set_threads(int threads, int processes = 1);

/// The BLAS that serves LibTorch's fp32 matrix products when it is OpenBLAS, with its
/// threading: "OpenBLAS 0.3.21 (OpenMP)", "... (pthreads)", "... (sequential)"; empty
/// for another BLAS (e.g. the MKL inside PyPI's torch). The pthreads build's spinning
/// workers compete with LibTorch's OpenMP team for the cores (docs/performance.md).
std::string blas_info();

/// True when blas_info() names OpenBLAS's pthreads build.
bool blas_uses_pthreads();

/// Which implementation the layers with a fused kernel use (runtime.kernels):
///   auto:      the fastest measured where it applies (docs/performance.md): on the CPU,
///              biaslab's attention kernel in fp32 and in bf16 (on AVX512-BF16's
///              instructions where the CPU has them), LibTorch 1.13 and 2.x alike, and
///              biaslab's residual add + LayerNorm kernel in pre-norm blocks; on CUDA,
///              LibTorch's fused attention where it has one (2.0+), its unfused
///              operators otherwise;
///   fused:     biaslab's fused kernels wherever they apply (the CPU attention kernel,
///              the add + LayerNorm kernel), LibTorch's fused attention elsewhere;
///   reference: LibTorch's unfused operators everywhere, the path every kernel is tested against.
/// Process-wide, like the thread count: it changes speed, not results beyond rounding.
enum class KernelMode { Auto, Fused, Reference };
/// Sets the mode from its config spelling; throws ConfigError (naming runtime.kernels) otherwise.
void set_kernel_mode(const std::string& mode);
void set_kernel_mode(KernelMode mode);
KernelMode kernel_mode();

/// Sets the kernel mode for a scope and restores the previous one at its end.
class KernelModeScope {
 public:
  explicit KernelModeScope(KernelMode mode) : previous_(kernel_mode()) { set_kernel_mode(mode); }
  ~KernelModeScope() { set_kernel_mode(previous_); }
  KernelModeScope(const KernelModeScope&) = delete;
  KernelModeScope& operator=(const KernelModeScope&) = delete;

 private:
  KernelMode previous_;
};

/// Seeds torch's global generator (and CUDA's when present).
void seed_everything(uint64_t seed);

/// Parses `auto|cpu|cuda|cuda:N` into a device that exists on this machine;
/// throws ConfigError (naming `key`) for bad values or CUDA asked for without CUDA.
c10::Device select_device(const std::string& spec, const std::string& key = "runtime.device");

/// A host tensor on `device`: as is for the CPU; for CUDA copied from pinned (page-locked)
/// memory without blocking the host, so the copy overlaps the work already queued.
at::Tensor to_device(const at::Tensor& host, const c10::Device& device);

/// Waits for the work queued on `device` (CUDA); a no-op on the CPU.
void synchronize(const c10::Device& device);

}  // namespace biaslab
