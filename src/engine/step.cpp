#include "engine/step.h"

#include <torch/torch.h>

#include <limits>

#include "engine/precision.h"

namespace biaslab {
namespace F = torch::nn::functional;

namespace {
// Global L2 norm of all gradients, as a 0-d tensor on the gradients' device.
torch::Tensor grad_norm(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> norms;
  for (const auto& p : params)
    if (p.grad().defined()) norms.push_back(p.grad().norm(2).to(torch::kFloat));
  if (norms.empty()) return torch::zeros({});
  return torch::stack(norms).norm(2);
}
}  // namespace

StepStats forward_backward(Classifier& model, const std::vector<torch::Tensor>& params,
                           const torch::Tensor& x, const torch::Tensor& y, const torch::Tensor& targets,
                           c10::Device device, const StepOptions& options, const LossScaler* scaler) {
  torch::Tensor logits;
  {
    AutocastScope autocast(options.precision, device);
    logits = model.forward(x);
  }
  logits = logits.to(torch::kFloat);
  torch::Tensor loss;
  if (targets.defined()) {
    // Mixup/CutMix soft targets, smoothed like hard ones: t (1 - eps) + eps / K.
    const double eps = options.label_smoothing;
    auto t = targets * (1.0 - eps) + eps / double(logits.size(1));
    loss = -(t * torch::log_softmax(logits, 1)).sum(1).mean();
  } else {
    loss = F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().label_smoothing(options.label_smoothing));
  }
  if (options.poison_loss) loss = loss * std::numeric_limits<double>::quiet_NaN();
  // Gradients set to none rather than zeroed (LibTorch 1.13's zero_grad() zeroes them in
  // place): backward then writes each gradient instead of adding it to a zero tensor.
  for (const auto& p : params) p.mutable_grad() = torch::Tensor();
  if (scaler) {
    scaler->scale_loss(loss).backward();
    scaler->unscale(params);
  } else {
    loss.backward();
  }
  if (options.reduce_gradients) options.reduce_gradients(params);
  // One host sync per step: loss, gradient norm and correct count together.
  auto stats = torch::stack({loss.detach().to(torch::kDouble), grad_norm(params).to(torch::kDouble),
                             (logits.detach().argmax(1) == y).sum().to(torch::kDouble)})
                   .cpu();
  const double* v = stats.data_ptr<double>();
  return StepStats{v[0], v[1], static_cast<int64_t>(v[2])};
}

void clip_gradients(const std::vector<torch::Tensor>& params, double norm, double max_norm) {
  if (max_norm <= 0 || norm <= max_norm) return;
  torch::NoGradGuard no_grad;
  const double factor = max_norm / (norm + 1e-6);
  for (const auto& p : params)
    if (p.grad().defined()) p.grad().mul_(factor);
}

}  // namespace biaslab
