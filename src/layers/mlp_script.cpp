// TorchScript of the MLP (layers/mlp.h); dropout is training-only.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "layers/mlp.h"

namespace biaslab {

torch::jit::Module MlpImpl::to_script(script::Builder& b, const std::string& path) const {
  using script::join;
  script::Members mem;
  mem.modules = {{"fc1", b.module(*fc1, join(path, "fc1"))}, {"fc2", b.module(*fc2, join(path, "fc2"))}};
  const std::string approx = act->options.approximate();
  const std::string gelu = approx == "none" ? "torch.gelu(self.fc1.forward(x))"
                                            : "torch.gelu(self.fc1.forward(x), approximate=\"" + approx + "\")";
  return b.make("Mlp", "    return self.fc2.forward(" + gelu + ")\n", mem);
}

}  // namespace biaslab
