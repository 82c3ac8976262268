#include "engine/evaluate.h"

#include <torch/torch.h>

#include "core/runtime.h"
#include "engine/precision.h"

namespace biaslab {

EvalMetrics evaluate(Classifier& model, Loader& loader, c10::Device device, const std::string& precision) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  // Sums stay on the device as tensors: one host sync at the end.
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  loader.set_epoch(0);
  for (int64_t i = 0; i < loader.batches_per_epoch(); ++i) {
    Batch b = loader.batch(i);
    auto x = to_device(b.images, device), y = to_device(b.labels, device);
    torch::Tensor logits;
    {
      AutocastScope autocast(precision, device);
      logits = model.forward(x);
    }
    logits = logits.to(torch::kFloat);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .to(torch::kDouble);
    correct += (logits.argmax(1) == y).sum();
  }
  model.train(was_training);
  EvalMetrics m;
  m.count = loader.size();
  if (m.count > 0) {
    m.loss = loss_sum.item<double>() / double(m.count);
    m.accuracy = double(correct.item<int64_t>()) / double(m.count);
  }
  return m;
}

}  // namespace biaslab
