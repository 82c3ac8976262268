#pragma once
// Throughput measurements for `biaslab bench` and `biaslab data bench`: the training
// step (engine/step.h, the Trainer's own code), inference (what evaluate() runs), the
// loader, and a dense-kernel peak on the spot to turn model FLOP/s into a utilisation.
// Every figure is images (or FLOPs) per second over timed repetitions after a warm-up:
// median, min and max.
#include <c10/core/Device.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"

namespace biaslab {

struct BenchSettings {
  int64_t warmup = 3;   ///< untimed steps (batches) first
  int64_t steps = 20;   ///< steps (batches) per timed repetition
  int64_t repeats = 5;  ///< timed repetitions
  std::string trace;    ///< when set: one more repetition of training steps, recorded by the
                        ///< operator profiler as a Chrome trace (chrome://tracing, Perfetto) here
};

/// A per-repetition rate: median, min, max.
struct Rate {
  double median = 0.0, min = 0.0, max = 0.0;
};

/// Times `repeats` calls of `run` after one call of `warm_up`; `run` returns the amount
/// done (images, FLOPs) and must leave no work queued on `device` (it syncs).
Rate measure_rate(const std::function<void()>& warm_up, const std::function<double()>& run, int64_t repeats);

/// Training images per second: synthetic images of the configured shape (fixed, on the
/// device), then what the Trainer runs per step -- forward_backward, gradient clipping,
/// the optimizer update, loss scaling (fp16) and EMA as configured. Not included: the
/// data pipeline (bench_loader), the learning-rate schedule (a scalar per step) and the
/// buffer copies of train.nonfinite: skip.
Rate bench_training(const Config& cfg, c10::Device device, const BenchSettings& s);

/// Inference images per second at train.eval_batch_size: eval mode, no grad, autocast
/// at train.precision, loss and top-1 as evaluate() computes them.
Rate bench_inference(const Config& cfg, c10::Device device, const BenchSettings& s);

struct LoaderRate {
  std::string variant;  ///< "normalise only", "configured augmentation", "... data.workers N"
  Rate rate;            ///< images per second
};
/// The training loader over `data` (load_dataset(cfg.data)): without augmentation, with
/// the configured augmentation, and with the configured workers when there are any.
std::vector<LoaderRate> bench_loader(const Config& cfg, const Dataset& data, const BenchSettings& s);

struct DensePeak {
  Rate flops_per_s;   ///< of the fastest kernel and size
  std::string kernel; ///< which, e.g. "mm 2048x2048x2048", "1x1 conv (channels-last) 8x512x32x32 -> 512"
};
/// The fastest dense kernel LibTorch runs at `precision` (fp32, bf16, fp16) on `device`
/// with the current thread count: square matrix products (n 512, 1024, 2048; also 4096,
/// 8192 on CUDA), 1x1 channels-last convolutions (oneDNN on the CPU, which beats the
/// BLAS matrix product in fp32 on AVX-512 machines) and 3x3 channels-last convolutions
/// (padding 1, as in a ResNet), each repetition long enough (>= 0.1 s)
/// for launch and sync costs not to count. The MFU reference: a model cannot beat it.
DensePeak dense_peak(const std::string& precision, c10::Device device, const BenchSettings& s);

}  // namespace biaslab
