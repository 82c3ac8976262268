// TorchScript of the patch embedding (layers/patch_embed.h), with its backbone if any.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "layers/patch_embed.h"

namespace biaslab {

torch::jit::Module PatchEmbedImpl::to_script(script::Builder& b, const std::string& path) const {
  using script::join;
  script::Members mem;
  std::string s;
  if (!backbone.is_empty()) {
    mem.modules.emplace_back("backbone", b.module(backbone, join(path, "backbone")));
    s += "    x = self.backbone.forward(x)\n";
  }
  mem.modules.emplace_back("proj", b.module(*proj, join(path, "proj")));
  s += "    return self.proj.forward(x).flatten(2).transpose(1, 2)\n";
  return b.make("PatchEmbed", s, mem);
}

}  // namespace biaslab
