#include "engine/evaluate.h"

#include <torch/torch.h>

#include "core/runtime.h"
#include "dist/communicator.h"
#include "engine/precision.h"

namespace biaslab {

EvalMetrics evaluate(Classifier& model, Loader& loader, c10::Device device, const std::string& precision,
                     dist::Communicator* comm) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  // Sums stay on the device as tensors: one host sync at the end.
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  loader.set_epoch(0);
  const int64_t first = comm ? comm->rank() : 0, stride = comm ? comm->world_size() : 1;
  for (int64_t i = first; i < loader.batches_per_epoch(); i += stride) {
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
  double sums[2] = {loss_sum.item<double>(), double(correct.item<int64_t>())};
  if (comm) {
    const auto total = comm->sum({sums[0], sums[1]}, "evaluation");
    sums[0] = total[0];
    sums[1] = total[1];
  }
  if (m.count > 0) {
    m.loss = sums[0] / double(m.count);
    m.accuracy = sums[1] / double(m.count);
  }
  return m;
}

}  // namespace biaslab
