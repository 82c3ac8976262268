// TorchScript of the norms (layers/norm.h), in eval mode: BatchNorm uses its running statistics.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "layers/norm.h"

namespace biaslab {
using script::ints;
using script::lit;

torch::jit::Module GroupNormFp32Impl::to_script(script::Builder& b, const std::string&) const {
  script::Members mem;
  mem.params = {{"weight", weight}, {"bias", bias}};
  return b.make("GroupNorm",
                "    return torch.group_norm(x, " + std::to_string(options.num_groups()) +
                    ", self.weight, self.bias, " + lit(options.eps()) + ", True)\n",
                mem);
}

torch::jit::Module LayerNormFp32Impl::to_script(script::Builder& b, const std::string&) const {
  script::Members mem;
  mem.params = {{"weight", weight}, {"bias", bias}};
  const auto& shape = options.normalized_shape();
  TORCH_CHECK(shape.size() == 1, "LayerNorm over one dimension expected");
  return b.make("LayerNorm",
                "    return torch.layer_norm(x, " + ints({shape[0]}) + ", self.weight, self.bias, " +
                    lit(options.eps()) + ", True)\n",
                mem);
}

torch::jit::Module TokenBatchNormImpl::to_script(script::Builder& b, const std::string&) const {
  script::Members mem;
  mem.params = {{"weight", weight}, {"bias", bias}};
  mem.buffers = {{"running_mean", running_mean}, {"running_var", running_var},
                 {"num_batches_tracked", num_batches_tracked}};
  return b.make("TokenBatchNorm",
                "    y = torch.batch_norm(x.reshape([-1, " + std::to_string(dim) +
                    "]), self.weight, self.bias, self.running_mean, self.running_var, False, 0.0, " + lit(eps) +
                    ", True)\n    return y.view(x.size())\n",
                mem);
}

torch::jit::Module RMSNormImpl::to_script(script::Builder& b, const std::string&) const {
  script::Members mem;
  mem.params = {{"weight", weight}};
  return b.make("RMSNorm",
                "    xf = x.float()\n"
                "    y = xf * torch.rsqrt(xf.pow(2).mean(-1, True) + " + lit(eps) + ")\n"
                "    return (y * self.weight).to(x.dtype)\n",
                mem);
}

}  // namespace biaslab
