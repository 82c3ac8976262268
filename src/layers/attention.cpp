#include "layers/attention.h"

#include <torch/torch.h>

#include "core/runtime.h"
#include "core/torch_compat.h"
#include "layers/attention_kernel.h"
#include "layers/init.h"
#include "layers/linear.h"

#include <cmath>
#include <limits>
#include <utility>

namespace biaslab {
namespace {

// Row and column offsets (query minus key) between all pairs of patches on a
// grid x grid patch grid in row-major order: two (P, P) int64 tensors.
std::pair<torch::Tensor, torch::Tensor> pairwise_offsets(int64_t grid) {
  auto r = torch::arange(grid * grid, torch::kLong).div(grid, "floor");
  auto c = torch::arange(grid * grid, torch::kLong).remainder(grid);
  return {r.unsqueeze(1) - r.unsqueeze(0), c.unsqueeze(1) - c.unsqueeze(0)};
}

}  // namespace

AttentionImpl::AttentionImpl(const AttentionOptions& options_) : options(options_) { reset(); }

void AttentionImpl::reset() {
  TORCH_CHECK(options.dim() % options.num_heads() == 0, "Attention: dim ", options.dim(),
              " is not divisible by num_heads ", options.num_heads());
  qkv = register_module("qkv", torch::nn::Linear(
      torch::nn::LinearOptions(options.dim(), 3 * options.dim()).bias(options.qkv_bias())));
  attn_drop = register_module("attn_drop", torch::nn::Dropout(options.attn_drop()));
  proj = register_module("proj", torch::nn::Linear(options.dim(), options.dim()));
  proj_drop = register_module("proj_drop", torch::nn::Dropout(options.proj_drop()));
  TORCH_CHECK(options.window() == 0 || (options.window() % 2 == 1 && options.grid() > 0),
              "Attention: window must be 0 (global) or odd with a patch grid, got window ", options.window(),
              " grid ", options.grid());
  if (options.window() > 0) mask_ = local_attention_mask(options.grid(), options.window(), options.prefix_tokens());
  if (options.relative_position()) {
    const int64_t g = options.grid();
    TORCH_CHECK(g > 0, "Attention: relative_position needs the patch grid");
    relative_position_bias_table =
        register_parameter("relative_position_bias_table", torch::zeros({(2 * g - 1) * (2 * g - 1), options.num_heads()}));
    trunc_normal_(relative_position_bias_table, 0.02);
    auto [dr, dc] = pairwise_offsets(g);  // each in [-(g-1), g-1]
    rel_index_ = ((dr + (g - 1)) * (2 * g - 1) + (dc + (g - 1))).flatten();
  }
  if (options.gated_positional()) {
    TORCH_CHECK(options.grid() > 0 && options.prefix_tokens() == 0 && options.window() == 0 &&
                    !options.relative_position(),
                "Attention: gated positional attention needs the patch grid, no prefix tokens, no window and no "
                "relative bias");
    auto [dr, dc] = pairwise_offsets(options.grid());  // query minus key
    auto dx = (-dc).to(torch::kFloat), dy = (-dr).to(torch::kFloat);
    rel_pos_ = torch::stack({dx, dy, dx * dx + dy * dy}, -1);  // (P, P, 3)
    pos_proj = register_module("pos_proj", torch::nn::Linear(3, options.num_heads()));
    gating_param = register_parameter("gating_param", torch::ones({options.num_heads()}));
    init_locality();
  }
}

void AttentionImpl::init_locality() {
  if (!options.gated_positional()) return;
  torch::NoGradGuard no_grad;
  // Head h of a k x k kernel (k = floor(sqrt(H))) looks at offset (dx, dy) around the
  // query: logit = -alpha |r - offset|^2 + const = alpha (2 dx r_x + 2 dy r_y - |r|^2).
  const int64_t heads = options.num_heads();
  const auto k = static_cast<int64_t>(std::sqrt(double(heads)));
  const double center = double(k - 1) / 2.0, alpha = options.locality_strength();
  auto w = torch::zeros({heads, 3});
  for (int64_t h = 0; h < heads; ++h) {
    const double dx = h < k * k ? double(h % k) - center : 0.0;
    const double dy = h < k * k ? double(h / k) - center : 0.0;
    w[h][0] = 2.0 * dx * alpha;
    w[h][1] = 2.0 * dy * alpha;
    w[h][2] = -alpha;
  }
  pos_proj->weight.copy_(w);
  pos_proj->bias.zero_();
  const int64_t c = options.dim();
  qkv->weight.narrow(0, 2 * c, c).copy_(torch::eye(c));  // v = identity
  gating_param.fill_(1.0);
}

torch::Tensor AttentionImpl::positional_attention(const c10::Device& device) {
  if (rel_pos_.device() != device) rel_pos_ = rel_pos_.to(device);
  return pos_proj(rel_pos_).permute({2, 0, 1}).softmax(-1);  // (H, P, P)
}

torch::Tensor AttentionImpl::relative_bias(int64_t n, const c10::Device& device) {
  if (rel_index_.device() != device) rel_index_ = rel_index_.to(device);
  const int64_t p = options.grid() * options.grid(), prefix = options.prefix_tokens();
  TORCH_CHECK(n == prefix + p, "Attention: relative bias built for ", prefix + p, " tokens, got ", n);
  auto patch = relative_position_bias_table.index_select(0, rel_index_).view({p, p, -1}).permute({2, 0, 1});
  if (prefix == 0) return patch;
  return torch::constant_pad_nd(patch, {prefix, 0, prefix, 0}, 0.0);  // (heads, N, N)
}

torch::Tensor local_attention_mask(int64_t grid, int64_t window, int64_t prefix) {
  auto [dr, dc] = pairwise_offsets(grid);
  auto near = (dr.abs() <= window / 2) & (dc.abs() <= window / 2);  // (P, P)
  const int64_t n = prefix + grid * grid;
  auto mask = torch::ones({n, n}, torch::kBool);
  mask.narrow(0, prefix, grid * grid).narrow(1, prefix, grid * grid).copy_(near);
  return mask;
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), n = x.size(1), c = x.size(2);
  const int64_t h = options.num_heads(), d = c / h;
  if (mask_.defined()) {
    TORCH_CHECK(mask_.size(0) == n, "Attention: local window built for ", mask_.size(0), " tokens, got ", n);
    if (mask_.device() != x.device()) mask_ = mask_.to(x.device());
  }
  const KernelMode mode = kernel_mode();
  // Fused kernels keep the softmax weights inside: not for analysis (keep_attention) or
  // GPSA's mixture of two attentions.
  const bool fusable = options.fused() && mode != KernelMode::Reference && !keep_attn_ && !options.gated_positional();
  auto qkv_out = linear(qkv, x);  // (B, N, 3C)
  // biaslab's CPU kernel (not with dropout on the weights while training), with `fused`
  // and `auto` alike. It measured faster than LibTorch's operators and than 2.x's
  // scaled_dot_product_attention on the CPU in fp32, and in bf16 both on AVX512-BF16 CPUs
  // (its vector products) and on an AVX2-only one (tiles widened to fp32, against
  // LibTorch's emulated bf16): docs/performance.md#what-runtimekernels-auto-runs-by-cpu.
  const bool cpu_kernel = fusable && attention_cpu_supports(qkv_out) && (!is_training() || options.attn_drop() == 0.0);
  if (cpu_kernel) {
    const torch::Tensor bias = relative_position_bias_table.defined() ? relative_bias(n, x.device()) : torch::Tensor();
    auto out = attention_cpu(qkv_out, h, bias, mask_, options.score_scale(d));  // (B, N, C)
    return proj_drop(linear(proj, out));
  }
  // (B, N, 3C) -> (B, N, 3, H, D) -> (3, B, H, N, D)
  auto qkv_ = qkv_out.view({b, n, 3, h, d}).permute({2, 0, 3, 1, 4});
  // unbind, not three selects: its backward stacks the three gradients in one op, where
  // each select's backward zero-fills a full-size (3, B, H, N, D) buffer and adds into it.
  const auto parts = qkv_.unbind(0);
  const auto &q = parts[0], &k = parts[1], &v = parts[2];
  // LibTorch's fused attention (2.0+): on CUDA, and on the CPU with `fused` where
  // biaslab's kernel does not apply.
  if (fusable && compat::has_fused_attention() && (mode == KernelMode::Fused || !x.device().is_cpu())) {
    torch::Tensor mask;  // bool (may attend) or additive float
    if (relative_position_bias_table.defined()) {
      mask = relative_bias(n, x.device());
      if (mask_.defined()) mask = mask.masked_fill(mask_.logical_not(), -std::numeric_limits<float>::infinity());
    } else if (mask_.defined()) {
      mask = mask_;
    }
    // LibTorch's kernel divides by sqrt(d); another score scale goes into q.
    const double q_gain = options.score_scale(d) * std::sqrt(double(d));
    auto out = compat::fused_attention(q_gain == 1.0 ? q : q * q_gain, k, v, mask,
                                       is_training() ? options.attn_drop() : 0.0);  // (B, H, N, D)
    return proj_drop(linear(proj, out.transpose(1, 2).reshape({b, n, c})));
  }
  // Scale q before the product (AttentionOptions::score_scale): N x N work is saved.
  auto attn = torch::matmul(q * options.score_scale(d), k.transpose(-2, -1));  // (B, H, N, N)
  if (relative_position_bias_table.defined()) attn = attn + relative_bias(n, x.device()).to(attn.scalar_type());
  if (mask_.defined()) attn = attn.masked_fill(mask_.logical_not(), -std::numeric_limits<float>::infinity());
  attn = attn.softmax(-1);
  if (options.gated_positional()) {
    auto gate = torch::sigmoid(gating_param).view({1, h, 1, 1});
    attn = (1.0 - gate) * attn + gate * positional_attention(x.device()).to(attn.scalar_type());
  }
  if (keep_attn_) last_attn_ = attn.detach();
  attn = attn_drop(attn);
  auto out = torch::matmul(attn, v);                  // (B, H, N, D)
  out = out.transpose(1, 2).reshape({b, n, c});       // (B, N, C)
  return proj_drop(linear(proj, out));
}

}  // namespace biaslab
