// TorchScript of multi-head attention (layers/attention.h): global, local-window and
// relative-position attention, and ConViT's gated positional attention. The index buffers
// the native module precomputes (attn_mask, relative_position_index, rel_pos) travel as buffers.
#include <torch/torch.h>

#include <cmath>

#include "core/torch_compat.h"
#include "export/script_builder.h"
#include "layers/attention.h"

namespace biaslab {
using script::ints;
using script::lit;

namespace {

// The relative-position bias (heads, N, N) over `grid` x `grid` patches, zero-padded for
// the `prefix` tokens before them.
std::string relative_bias_expr(int64_t grid, int64_t prefix) {
  const std::string p = std::to_string(grid * grid);
  std::string bias = "self.relative_position_bias_table.index_select(0, self.relative_position_index).view([" + p +
                     ", " + p + ", -1]).permute([2, 0, 1])";
  if (prefix > 0) bias = "torch.constant_pad_nd(" + bias + ", " + ints({prefix, 0, prefix, 0}) + ", 0.0)";
  return bias;
}

// out = softmax(q k^T * scale + bias) v by the fused kernels; `bias` "" = none. The
// kernel divides by sqrt(d): `q_gain` = scale * sqrt(d) multiplies q first (1: nothing).
std::string fused_attention(const std::string& bias, bool window, double q_gain) {
  std::string s, mask = "None";
  if (!bias.empty()) {
    s += "    mask = " + bias + "\n";
    if (window) s += "    mask = mask.masked_fill(torch.logical_not(self.attn_mask), float(\"-inf\"))\n";
    s += "    mask = mask.to(q.dtype)\n";
    mask = "mask";
  } else if (window) {
    mask = "self.attn_mask";
  }
  const std::string q = q_gain == 1.0 ? "q" : "q * " + lit(q_gain);
  return s + "    out = torch.scaled_dot_product_attention(" + q + ", k, v, " + mask + ", 0.0, False)\n";
}

// attn = softmax(q k^T * scale + bias), masked to the window; `bias` "" = none.
std::string attention_weights(double scale, const std::string& bias, bool window) {
  std::string s = "    attn = torch.matmul(q * " + lit(scale) + ", k.transpose(-2, -1))\n";
  if (!bias.empty()) s += "    attn = attn + " + bias + ".to(attn.dtype)\n";
  if (window) s += "    attn = attn.masked_fill(torch.logical_not(self.attn_mask), float(\"-inf\"))\n";
  return s + "    attn = torch.softmax(attn, -1)\n";
}

// GPSA: attn mixed with the positional attention by each head's gate.
std::string gated_mix(int64_t heads) {
  return "    pos = torch.softmax(self.pos_proj.forward(self.rel_pos).permute([2, 0, 1]), -1)\n"
         "    gate = torch.sigmoid(self.gating_param).view([1, " + std::to_string(heads) + ", 1, 1])\n"
         "    attn = (1.0 - gate) * attn + gate * pos.to(attn.dtype)\n";
}

}  // namespace

torch::jit::Module AttentionImpl::to_script(script::Builder& b, const std::string& path) const {
  using script::join;
  const auto& o = options;
  const int64_t h = o.num_heads(), d = o.dim() / h;
  script::Members mem;
  mem.modules = {{"qkv", b.module(*qkv, join(path, "qkv"))}, {"proj", b.module(*proj, join(path, "proj"))}};
  std::string s =
      "    b = x.size(0)\n    n = x.size(1)\n    c = x.size(2)\n"
      "    qkv = self.qkv.forward(x).view([b, n, 3, " + std::to_string(h) + ", " + std::to_string(d) +
      "]).permute([2, 0, 3, 1, 4])\n"
      "    q = qkv[0]\n    k = qkv[1]\n    v = qkv[2]\n";
  const bool rel = relative_position_bias_table.defined(), window = window_mask().defined();
  if (rel) {
    mem.params.emplace_back("relative_position_bias_table", relative_position_bias_table);
    mem.buffers.emplace_back("relative_position_index", relative_index());
  }
  if (window) mem.buffers.emplace_back("attn_mask", window_mask());
  const std::string bias = rel ? relative_bias_expr(o.grid(), o.prefix_tokens()) : "";
  // The same kernels as the native module: the fused one where this LibTorch has it.
  if (!o.gated_positional() && compat::has_fused_attention()) {
    s += fused_attention(bias, window, o.score_scale(d) * std::sqrt(double(d)));
  } else {
    s += attention_weights(o.score_scale(d), bias, window);
    if (o.gated_positional()) {
      mem.modules.emplace_back("pos_proj", b.module(*pos_proj, join(path, "pos_proj")));
      mem.params.emplace_back("gating_param", gating_param);
      mem.buffers.emplace_back("rel_pos", relative_offsets());
      s += gated_mix(h);
    }
    s += "    out = torch.matmul(attn, v)\n";
  }
  s += "    return self.proj.forward(out.transpose(1, 2).reshape([b, n, c]))\n";
  return b.make(o.gated_positional() ? "GatedPositionalAttention" : "Attention", s, mem);
}

}  // namespace biaslab
