#include "layers/drop_path.h"

#include <torch/torch.h>

namespace biaslab {

torch::Tensor DropPathImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p <= 0.0) return x;
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[0] = x.size(0);  // one draw per sample
  auto keep = torch::empty(shape, x.options()).bernoulli_(1.0 - p);
  return x * keep / (1.0 - p);
}

void LayerScaleImpl::reset() { gamma = register_parameter("gamma", torch::full({dim}, init)); }

}  // namespace biaslab
