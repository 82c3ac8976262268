#include "analysis/attention_stats.h"

#include <torch/torch.h>

#include "layers/transformer_block.h"
#include "models/vit.h"

namespace biaslab {
namespace {

// The weights of patch queries on patch keys, renormalised over the patch keys:
// (B, H, P, P).
torch::Tensor patch_weights(const torch::Tensor& attn, int64_t grid, int64_t prefix) {
  const int64_t p = grid * grid;
  TORCH_CHECK(attn.dim() == 4 && attn.size(2) == prefix + p && attn.size(3) == prefix + p,
              "attention over ", prefix, " + ", p, " tokens expected, got ", attn.sizes());
  auto w = attn.narrow(2, prefix, p).narrow(3, prefix, p).to(torch::kDouble);
  return w / w.sum(-1, true).clamp_min(1e-30);
}

}  // namespace

std::vector<torch::Tensor> collect_attention(ViTImpl& vit, const torch::Tensor& images) {
  std::vector<AttentionImpl*> attns;
  for (size_t i = 0; i < vit.blocks->size(); ++i) attns.push_back(vit.blocks->at<TransformerBlockImpl>(i).attn.get());
  const bool was_training = vit.is_training();
  vit.eval();
  for (auto* a : attns) a->keep_attention(true);
  try {
    torch::NoGradGuard no_grad;
    vit.forward(images);
  } catch (...) {
    for (auto* a : attns) a->keep_attention(false);
    vit.train(was_training);
    throw;
  }
  std::vector<torch::Tensor> out;
  for (auto* a : attns) {
    out.push_back(a->last_attention().to(torch::kFloat));
    a->keep_attention(false);
  }
  vit.train(was_training);
  return out;
}

torch::Tensor attention_entropy(const torch::Tensor& attn) {
  const auto a = attn.to(torch::kDouble);
  const auto terms = torch::where(a > 0, -a * a.clamp_min(1e-300).log(), torch::zeros_like(a));
  return terms.sum(-1).mean(torch::IntArrayRef{0, 2});  // (H)
}

torch::Tensor score_variance(const torch::Tensor& attn) {
  const auto a = attn.to(torch::kDouble);
  const auto on = (a > 0).to(torch::kDouble);
  const auto logs = torch::where(a > 0, a.clamp_min(1e-300).log(), torch::zeros_like(a));
  const auto k = on.sum(-1).clamp_min(1.0);
  const auto mean = logs.sum(-1) / k;
  const auto var = ((logs - mean.unsqueeze(-1)).pow(2) * on).sum(-1) / (k - 1.0).clamp_min(1.0);  // sample variance
  return var.mean(torch::IntArrayRef{0, 2});  // (H)
}

torch::Tensor mean_attention_distance(const torch::Tensor& attn, int64_t grid, int64_t prefix, double patch_px) {
  auto w = patch_weights(attn, grid, prefix);  // (B, H, P, P)
  auto r = torch::arange(grid * grid, torch::kLong).div(grid, "floor").to(torch::kDouble);
  auto c = torch::arange(grid * grid, torch::kLong).remainder(grid).to(torch::kDouble);
  auto dist = torch::sqrt((r.unsqueeze(1) - r.unsqueeze(0)).pow(2) + (c.unsqueeze(1) - c.unsqueeze(0)).pow(2));
  return (w * dist).sum(-1).mean(torch::IntArrayRef{0, 2}) * patch_px;  // (H)
}

torch::Tensor attention_rollout(const std::vector<torch::Tensor>& attn) {
  TORCH_CHECK(!attn.empty(), "attention rollout needs at least one block");
  const int64_t b = attn.back().size(0), n = attn.back().size(2);
  auto rollout = torch::eye(n, torch::kDouble).expand({b, n, n}).clone();
  for (const auto& a : attn) {
    auto mean = a.to(torch::kDouble).mean(1);  // (B, N_l, N_l)
    const int64_t missing = n - mean.size(1);
    if (missing > 0) {  // tokens that join later attend only to themselves here
      auto full = torch::eye(n, torch::kDouble).expand({b, n, n}).clone();
      full.narrow(1, missing, n - missing).narrow(2, missing, n - missing).copy_(mean);
      mean = full;
    }
    auto mixed = 0.5 * mean + 0.5 * torch::eye(n, torch::kDouble);
    mixed = mixed / mixed.sum(-1, true);
    rollout = torch::matmul(mixed, rollout);
  }
  return rollout.to(torch::kFloat);
}

torch::Tensor query_kernel(const torch::Tensor& attn, int64_t grid, int64_t prefix, int64_t query) {
  auto w = patch_weights(attn, grid, prefix);  // (B, H, P, P)
  return w.select(2, query).view({w.size(0), w.size(1), grid, grid}).to(torch::kFloat);
}

void KernelMoments::add(const torch::Tensor& attn, int64_t grid, int64_t prefix) {
  const auto w = patch_weights(attn, grid, prefix);  // (B, H, P, P)
  if (!sum.defined()) {
    sum = torch::zeros(w.sizes().slice(1), torch::kDouble);
    sum_sq = torch::zeros_like(sum);
  }
  sum += w.sum(0);
  sum_sq += w.pow(2).sum(0);
  count += w.size(0);
}

double KernelMoments::variance() const {
  if (count < 2) return 0.0;
  const auto mean = sum / double(count);
  const auto var = (sum_sq / double(count) - mean.pow(2)).clamp_min(0.0);
  const auto attended = sum > 0;
  return var.masked_select(attended).mean().item<double>();
}

double kernel_variance(const torch::Tensor& attn, int64_t grid, int64_t prefix) {
  KernelMoments m;
  m.add(attn, grid, prefix);
  return m.variance();
}

}  // namespace biaslab
