#pragma once
// The compute of one training step, shared by the Trainer and `biaslab bench` so that
// what the benchmark times is what training runs: forward under autocast, the loss,
// backward (scaled under fp16), and one host sync for the step's statistics. The
// optimizer update and the non-finite policy stay with the caller.
#include <c10/core/Device.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/loss_scaler.h"
#include "models/classifier.h"

namespace biaslab {

struct StepOptions {
  std::string precision = "fp32";  ///< fp32 | bf16 | fp16 (autocast for the forward pass)
  double label_smoothing = 0.0;
  bool poison_loss = false;        ///< multiply the loss by NaN (fault injection in tests)
  /// Data-parallel training: turns this process's gradients into the global batch's
  /// (after backward and unscaling, before the gradient norm).
  std::function<void(const std::vector<torch::Tensor>&)> reduce_gradients;
};

struct StepStats {
  double loss = 0.0;       ///< unscaled mean loss of the batch
  double grad_norm = 0.0;  ///< global L2 norm of the (unscaled) gradients
  int64_t correct = 0;     ///< top-1 hits against the hard labels
};

/// Clears the gradients of `params` (all of the model's), then forward, loss (cross-entropy,
/// or soft `targets` with Mixup/CutMix), backward and unscaling; `x`, `y` and `targets`
/// already on the model's device.
StepStats forward_backward(Classifier& model, const std::vector<torch::Tensor>& params,
                           const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& targets,
                           c10::Device device, const StepOptions& options, const LossScaler* scaler = nullptr);

/// train.grad_clip: scales every gradient by max_norm / norm when norm > max_norm > 0.
void clip_gradients(const std::vector<torch::Tensor>& params, double norm, double max_norm);

}  // namespace biaslab
