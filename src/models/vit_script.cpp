// TorchScript of the Vision Transformer (models/vit.h) and its hybrids: the patch
// embedding (with its backbone), class token and positional embedding, the blocks (the
// class token joining after the GPSA ones), the final norm, the pooling and the head. At
// the root, the model checks its input's shape.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "models/vit.h"

namespace biaslab {
using script::join;

torch::jit::Module ViTImpl::to_script(script::Builder& b, const std::string& path) const {
  const auto& o = options;
  script::Members mem = b.start(path);
  std::string s = b.input_check(path, o.in_chans());
  mem.modules.emplace_back("patch_embed", b.module(*patch_embed, join(path, "patch_embed")));
  s += "    x = self.patch_embed.forward(x)\n";
  const bool cls = cls_token.defined();
  if (cls) mem.params.emplace_back("cls_token", cls_token);
  const std::string add_cls = "    x = torch.cat([self.cls_token.expand([x.size(0), -1, -1]), x], 1)\n";
  if (cls && cls_at() == 0) s += add_cls;
  if (pos_embed.defined()) {
    if (o.pos_embed() == "learned") {
      mem.params.emplace_back("pos_embed", pos_embed);
    } else {
      mem.buffers.emplace_back("pos_embed", pos_embed);
    }
    s += "    x = x + self.pos_embed\n";
  }
  mem.modules.emplace_back("blocks", b.module(*blocks, join(path, "blocks")));
  if (cls && cls_at() > 0) {  // the class token joins after the GPSA blocks
    for (size_t i = 0; i < blocks->size(); ++i) {
      if (i == cls_at()) s += add_cls;
      s += "    x = getattr(self.blocks, \"" + std::to_string(i) + "\").forward(x)\n";
    }
    if (cls_at() == blocks->size()) s += add_cls;
  } else {
    s += "    x = self.blocks.forward(x)\n";
  }
  mem.modules.emplace_back("norm", b.module(norm, join(path, "norm")));
  s += "    x = self.norm.forward(x)\n";
  if (cls) {
    s += "    x = x.select(1, 0)\n";
  } else if (attention_pool) {
    mem.modules.emplace_back("attention_pool", b.module(*attention_pool, join(path, "attention_pool")));
    s += "    w = torch.softmax(self.attention_pool.forward(x), 1)\n"
         "    x = torch.matmul(w.transpose(1, 2), x).squeeze(1)\n";
  } else {
    s += "    x = x.mean(1)\n";
  }
  mem.modules.emplace_back("head", b.module(*head, join(path, "head")));
  return b.make("VisionTransformer", s + "    return self.head.forward(x)\n", mem);
}

}  // namespace biaslab
