#include "engine/bench.h"

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "core/errors.h"
#include "core/runtime.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "engine/ema.h"
#include "engine/evaluate.h"
#include "engine/loss_scaler.h"
#include "engine/memory_format.h"
#include "engine/learner.h"
#include "engine/loaders.h"
#include "engine/optimizer.h"
#include "engine/precision.h"
#include "engine/step.h"
#include "models/registry.h"

namespace biaslab {
namespace {

// Synthetic batch of the configured input shape: the data pipeline is timed separately.
std::pair<torch::Tensor, torch::Tensor> synthetic_batch(const Config& cfg, int64_t batch, c10::Device device) {
  auto x = torch::randn({batch, cfg.data.channels, cfg.data.image_size, cfg.data.image_size}).to(device);
  auto y = torch::randint(cfg.data.num_classes, {batch}, torch::kLong).to(device);
  return {x, y};
}

// The configured model, seeded, on `device` in the run's memory format.
ClassifierPtr placed_model(const Config& cfg, c10::Device device) {
  torch::manual_seed(uint64_t(cfg.runtime.seed));
  ClassifierPtr model = build_model(cfg.model, input_spec(cfg.data));
  model->to(device);
  if (uses_channels_last(cfg, *model)) to_channels_last(*model);
  return model;
}

c10::ScalarType dtype_of(const std::string& precision) {
  if (precision == "bf16") return torch::kBFloat16;
  if (precision == "fp16") return torch::kHalf;
  return torch::kFloat;
}

// Rate of `run` (returns FLOPs, syncs), calibrated so that one repetition lasts >= 0.1 s.
Rate calibrated_rate(const std::function<double(int64_t)>& run, int64_t repeats) {
  run(1);  // first call: kernel selection, JIT, allocation
  int64_t reps = 1;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    run(reps);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >= 0.1 || reps >= (1 << 20))
      break;
    reps *= 2;
  }
  return measure_rate([] {}, [&] { return run(reps); }, std::max<int64_t>(repeats, 3));
}

}  // namespace

Rate measure_rate(const std::function<void()>& warm_up, const std::function<double()>& run, int64_t repeats) {
  warm_up();
  std::vector<double> rates;
  for (int64_t r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double amount = run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(amount / std::max(s, 1e-12));
  }
  std::sort(rates.begin(), rates.end());
  return Rate{rates[rates.size() / 2], rates.front(), rates.back()};
}

Rate bench_training(const Config& cfg, c10::Device device, const BenchSettings& s) {
  ClassifierPtr model = placed_model(cfg, device);
  model->train();
  const EmaModel averaged = make_ema(cfg, *model, device);
  auto optimizer = make_optimizer(*model, cfg.optim);
  const std::vector<torch::Tensor> params = model->parameters();
  std::optional<LossScaler> scaler;
  if (cfg.train.precision == "fp16") scaler.emplace();
  const auto [x, y] = synthetic_batch(cfg, cfg.train.batch_size, device);
  StepOptions options;
  options.precision = cfg.train.precision;
  options.label_smoothing = cfg.train.label_smoothing;
  int64_t nonfinite_steps = 0;
  auto steps = [&, x = x, y = y](int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const StepStats st = forward_backward(*model, params, x, y, torch::Tensor(), device, options,
                                            scaler ? &*scaler : nullptr);
      const bool finite = std::isfinite(st.loss) && std::isfinite(st.grad_norm);
      if (scaler) scaler->update(!finite);
      if (!finite) {  // as the Trainer: no update from a non-finite step
        ++nonfinite_steps;
        continue;
      }
      clip_gradients(params, st.grad_norm, cfg.train.grad_clip);
      optimizer->step();
      if (averaged.ema) averaged.ema->update();
    }
    synchronize(device);
    return double(n * cfg.train.batch_size);
  };
  const Rate rate = measure_rate([&] { steps(s.warmup); }, [&] { return steps(s.steps); }, s.repeats);
  if (!s.trace.empty()) {
    torch::autograd::profiler::RecordProfile profile(s.trace);
    steps(s.steps);
  }
  if (nonfinite_steps > 0)
    throw NonFiniteError("bench: " + std::to_string(nonfinite_steps) +
                         " training step(s) on the synthetic batch had a non-finite loss or gradient and made no "
                         "update; the throughput would not be that of training (lower optim.lr?)");
  return rate;
}

Rate bench_inference(const Config& cfg, c10::Device device, const BenchSettings& s) {
  ClassifierPtr model = placed_model(cfg, device);
  model->eval();
  torch::NoGradGuard no_grad;
  const int64_t batch = cfg.train.eval_batch_size;
  const auto [x, y] = synthetic_batch(cfg, batch, device);
  auto batches = [&, x = x, y = y](int64_t n) {
    EvalSums sums(device);
    for (int64_t i = 0; i < n; ++i) accumulate_eval_batch(*model, x, y, device, cfg.train.precision, sums);
    (void)(sums.loss_sum + sums.correct).item<double>();  // one host sync per repetition, as evaluate() per loader
    return double(n * batch);
  };
  return measure_rate([&] { batches(s.warmup); }, [&] { return batches(s.steps); }, s.repeats);
}

std::vector<LoaderRate> bench_loader(const Config& cfg, const Dataset& data, const BenchSettings& s) {
  struct Variant {
    std::string name;
    bool augment;
    int64_t workers;
  };
  std::vector<Variant> variants = {{"normalise only", false, 0}, {"configured augmentation", true, 0}};
  if (cfg.data.workers > 0)
    variants.push_back({"configured augmentation, data.workers " + std::to_string(cfg.data.workers), true,
                        cfg.data.workers});
  std::vector<LoaderRate> out;
  for (const auto& v : variants) {
    LoaderOptions o = loader_options(cfg, data, cfg.train.batch_size, v.augment);
    o.shuffle = o.drop_last = true;
    o.workers = v.workers;
    Loader loader(data.train, o);
    if (loader.batches_per_epoch() == 0)
      throw DataError("data bench: the training split has fewer images (" + std::to_string(data.train.size()) +
                      ") than one batch (train.batch_size " + std::to_string(cfg.train.batch_size) + ")");
    const int64_t n = std::min(s.steps, loader.batches_per_epoch());
    int64_t epoch = 0;
    auto batches = [&](int64_t count) {
      loader.set_epoch(epoch++);
      int64_t images = 0;
      for (int64_t i = 0; i < count; ++i) images += loader.batch(i).images.size(0);
      return double(images);
    };
    out.push_back({v.name, measure_rate([&] { batches(std::min(s.warmup, n)); }, [&] { return batches(n); },
                                        s.repeats)});
  }
  return out;
}


DensePeak dense_peak(const std::string& precision, c10::Device device, const BenchSettings& s) {
  DensePeak best;
  const auto dtype = dtype_of(precision);
  auto consider = [&](const Rate& r, const std::string& kernel) {
    if (r.median > best.flops_per_s.median) best = DensePeak{r, kernel};
  };
  std::vector<int64_t> sizes = {512, 1024, 2048};
  if (device.is_cuda()) sizes.insert(sizes.end(), {4096, 8192});
  for (const int64_t n : sizes) {
    auto a = torch::randn({n, n}).to(device, dtype), b = torch::randn({n, n}).to(device, dtype);
    const Rate r = calibrated_rate(
        [&](int64_t count) {
          for (int64_t i = 0; i < count; ++i) torch::mm(a, b);
          synchronize(device);
          return 2.0 * double(n) * double(n) * double(n) * double(count);
        },
        s.repeats);
    consider(r, fmt::format("mm {}x{}x{}", n, n, n));
  }
  // Channels-last convolutions of k x k kernels (padding k / 2) on batch x c x 32 x 32:
  // 1x1 (oneDNN beats the BLAS matrix product in fp32 on AVX-512 machines) and 3x3 as the
  // CNNs here run them (oneDNN's direct kernels can beat both; without them a ResNet's
  // utilisation read above 100%).
  const int64_t side = 32;
  auto conv = [&](int64_t batch, int64_t c, int64_t k) {
    const auto cl = at::MemoryFormat::ChannelsLast;
    auto x = torch::randn({batch, c, side, side}).to(device, dtype).contiguous(cl);
    auto w = torch::randn({c, c, k, k}).to(device, dtype).contiguous(cl);
    const Rate r = calibrated_rate(
        [&](int64_t count) {
          for (int64_t i = 0; i < count; ++i) torch::conv2d(x, w, {}, 1, k / 2);
          synchronize(device);
          return 2.0 * double(batch * side * side) * double(c) * double(c) * double(k * k) * double(count);
        },
        s.repeats);
    consider(r, fmt::format("{}x{} conv (channels-last) {}x{}x{}x{} -> {}", k, k, batch, c, side, side, c));
  };
  for (const int64_t c : {256, 512, 1024}) conv(8, c, 1);
  for (const int64_t c : {64, 128, 256}) conv(32, c, 3);
  return best;
}

}  // namespace biaslab
