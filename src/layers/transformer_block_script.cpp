// TorchScript of the transformer block (layers/transformer_block.h): pre- or post-norm,
// with or without residuals and LayerScale / ReZero gains; drop-path is training-only.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "layers/transformer_block.h"

namespace biaslab {

torch::jit::Module TransformerBlockImpl::to_script(script::Builder& b, const std::string& path) const {
  using script::join;
  script::Members mem;
  mem.modules = {{"norm1", b.module(norm1, join(path, "norm1"))}, {"attn", b.module(*attn, join(path, "attn"))},
                 {"norm2", b.module(norm2, join(path, "norm2"))}, {"mlp", b.module(*mlp, join(path, "mlp"))}};
  const bool ls = bool(ls1);
  if (ls) {
    mem.modules.emplace_back("ls1", b.module(*ls1, join(path, "ls1")));
    mem.modules.emplace_back("ls2", b.module(*ls2, join(path, "ls2")));
  }
  auto branch = [&](const std::string& expr, const std::string& scale) {
    return ls ? "self." + scale + ".forward(" + expr + ")" : expr;
  };
  const std::string plus_x = options.residual() ? "x + " : "", plus_y = options.residual() ? "y + " : "";
  std::string s;
  if (options.norm_placement() == "post") {
    s = "    y = self.norm1.forward(" + plus_x + branch("self.attn.forward(x)", "ls1") + ")\n"
        "    return self.norm2.forward(" + plus_y + branch("self.mlp.forward(y)", "ls2") + ")\n";
  } else {
    s = "    y = " + plus_x + branch("self.attn.forward(self.norm1.forward(x))", "ls1") + "\n"
        "    return " + plus_y + branch("self.mlp.forward(self.norm2.forward(y))", "ls2") + "\n";
  }
  return b.make("Block", s, mem);
}

}  // namespace biaslab
