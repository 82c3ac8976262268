#include "engine/evaluate.h"

#include <torch/torch.h>

#include "core/runtime.h"
#include "distributed/communicator.h"
#include "engine/precision.h"

namespace biaslab {

EvalSums::EvalSums(c10::Device device)
    : loss_sum(torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device))),
      correct(torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device))),
      correct5(torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device))) {}

void accumulate_eval_batch(Classifier& model, const torch::Tensor& x, const torch::Tensor& y, c10::Device device,
                           const std::string& precision, EvalSums& sums) {
  torch::Tensor logits;
  {
    AutocastScope autocast(precision, device);
    logits = model.forward(x);
  }
  logits = logits.to(torch::kFloat);
  sums.loss_sum += torch::nn::functional::cross_entropy(
                       logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                       .to(torch::kDouble);
  sums.correct += (logits.argmax(1) == y).sum();
  if (reports_top5(logits.size(1))) {
    sums.has_top5 = true;
    sums.correct5 += (std::get<1>(logits.topk(5, 1)) == y.unsqueeze(1)).any(1).sum();
  }
}

EvalMetrics evaluate(Classifier& model, Loader& loader, c10::Device device, const std::string& precision,
                     dist::Communicator* comm) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  EvalSums sums(device);  // one host sync at the end
  loader.set_epoch(0);
  const int64_t first = comm ? comm->rank() : 0, stride = comm ? comm->world_size() : 1;
  for (int64_t i = first; i < loader.batches_per_epoch(); i += stride) {
    Batch b = loader.batch(i);
    accumulate_eval_batch(model, to_device(b.images, device), to_device(b.labels, device), device, precision, sums);
  }
  model.train(was_training);
  EvalMetrics m;
  m.count = loader.size();
  // totals[3] > 0: some rank evaluated a batch of more than 5 classes (a rank may have none).
  double totals[4] = {sums.loss_sum.item<double>(), double(sums.correct.item<int64_t>()),
                      double(sums.correct5.item<int64_t>()), sums.has_top5 ? 1.0 : 0.0};
  if (comm) {
    const auto reduced = comm->sum({totals[0], totals[1], totals[2], totals[3]}, "evaluation");
    for (int i = 0; i < 4; ++i) totals[i] = reduced[size_t(i)];
  }
  if (m.count > 0) {
    m.loss = totals[0] / double(m.count);
    m.accuracy = totals[1] / double(m.count);
    if (totals[3] > 0) m.top5 = totals[2] / double(m.count);
  }
  return m;
}

}  // namespace biaslab
