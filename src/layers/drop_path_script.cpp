// TorchScript of LayerScale (layers/drop_path.h). DropPath is training-only and has none:
// the block's translation leaves it out.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "layers/drop_path.h"

namespace biaslab {

torch::jit::Module LayerScaleImpl::to_script(script::Builder& b, const std::string&) const {
  script::Members mem;
  mem.params = {{"gamma", gamma}};
  return b.make("LayerScale", "    return x * self.gamma\n", mem);
}

}  // namespace biaslab
