// The bf16 paths of the fused CPU kernels: the packed bf16 products (layers/bf16_gemm.h)
// and the attention kernel in bf16 (layers/attention_kernel.h), each against LibTorch's
// operators in fp32, and the AVX512-BF16 path against the portable one where the CPU has
// it (elsewhere those comparisons skip: the vector path is never executed there).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "layers/attention_kernel.h"
#include "layers/bf16_gemm.h"

using namespace biaslab;

namespace {

const uint16_t* bits(const torch::Tensor& t) { return reinterpret_cast<const uint16_t*>(t.data_ptr<at::BFloat16>()); }

// Turns the vector path off for a scope.
struct PortableScope {
  PortableScope() { bf16_gemm::set_vector_path(false); }
  ~PortableScope() { bf16_gemm::set_vector_path(true); }
};

// max |a - b| / max |b|: the error relative to the result's scale.
double scaled_error(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-12);
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<double>() / scale;
}

// C = alpha A B for bf16 A (m x k) and B (k x n), on the given path, through either
// packing of each operand: A as rows (pack_a) or as the columns of a packed A^T
// (pack_b, Layout::Columns); B itself (pack_b) or from the rows of B^T (pack_b_transposed).
torch::Tensor packed_product(const torch::Tensor& a, const torch::Tensor& b, float alpha, bool a_columns,
                             bool b_transposed, bool portable) {
  using namespace bf16_gemm;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  std::vector<uint16_t> ap(size_t(a_columns ? b_size(k, m) : a_size(m, k))), bp(size_t(b_size(k, n)));
  if (a_columns) {
    auto at = a.t().contiguous();  // k x m: A^T as a B
    pack_b(bits(at), k, m, m, ap.data());
  } else {
    pack_a(bits(a), m, k, k, ap.data());
  }
  if (b_transposed) {
    auto bt = b.t().contiguous();  // n x k rows
    pack_b_transposed(bits(bt), k, n, k, bp.data());
  } else {
    pack_b(bits(b), k, n, n, bp.data());
  }
  const Layout layout = a_columns ? Layout::Columns : Layout::Rows;
  auto c = torch::full({m, n + 3}, 7.0f);  // ldc > n: the columns past n must stay untouched
  using Product = void (*)(int64_t, int64_t, int64_t, float, const uint16_t*, Layout, const uint16_t*, float*,
                           int64_t);
  const Product run = portable ? Product(gemm_portable) : Product(gemm);
  run(m, n, k, alpha, ap.data(), layout, bp.data(), c.data_ptr<float>(), n + 3);
  EXPECT_TRUE(torch::all(c.narrow(1, n, 3) == 7.0f).item<bool>()) << "wrote past column " << n;
  // The bf16-output product is the fp32 one rounded, on either path.
  set_vector_path(!portable);
  auto h = torch::zeros({m, n + 3}, torch::kBFloat16);
  gemm(m, n, k, alpha, ap.data(), layout, bp.data(), reinterpret_cast<uint16_t*>(h.data_ptr<at::BFloat16>()), n + 3);
  set_vector_path(true);
  EXPECT_TRUE(torch::equal(h.narrow(1, 0, n), c.narrow(1, 0, n).to(torch::kBFloat16))) << "bf16 output";
  EXPECT_TRUE(torch::all(h.narrow(1, n, 3) == 0).item<bool>()) << "bf16 output wrote past column " << n;
  return c.narrow(1, 0, n);
}

}  // namespace

TEST(Bf16Gemm, PackedProductsMatchFp32) {
  // bf16 inputs are exact in fp32, so the products differ from an fp32 matmul of the same
  // values only by the order of the fp32 sums: 1e-5 of the result's scale. Odd and even
  // sizes around the vector widths (16 columns, 4 rows, pairs in k), every packing.
  torch::manual_seed(21);
  std::vector<bool> paths = {true};  // portable
  if (bf16_gemm::vector_available()) paths.push_back(false);
  for (int64_t m : {1, 3, 4, 7, 50}) {
    for (int64_t n : {1, 15, 16, 17, 33, 50}) {
      for (int64_t k : {1, 2, 5, 32, 51}) {
        auto a = torch::randn({m, k}).to(torch::kBFloat16), b = torch::randn({k, n}).to(torch::kBFloat16);
        auto ref = torch::matmul(a.to(torch::kFloat), b.to(torch::kFloat)) * 0.5f;
        for (int variant = 0; variant < 4; ++variant) {
          for (bool portable : paths) {
            const bool a_columns = variant & 1, b_transposed = variant & 2;
            const std::string what = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                                     (a_columns ? " A columns" : " A rows") + (b_transposed ? " B^T" : " B") +
                                     (portable ? " portable" : " vector");
            EXPECT_LT(scaled_error(packed_product(a, b, 0.5f, a_columns, b_transposed, portable), ref), 1e-5)
                << what;
          }
        }
      }
    }
  }
}

TEST(Bf16Gemm, PackingFromFp32RoundsLikeLibTorch) {
  // pack_a and pack_b from fp32 give the bits of the bf16 tensor LibTorch's cast makes, on
  // both paths (odd sizes: the padding is zero).
  torch::manual_seed(24);
  const int64_t m = 7, k = 19;
  auto x = torch::randn({m, k}) * 3.0;
  auto h = x.to(torch::kBFloat16);
  std::vector<bool> vector_on = {false};
  if (bf16_gemm::vector_available()) vector_on.push_back(true);
  for (bool on : vector_on) {
    bf16_gemm::set_vector_path(on);
    std::vector<uint16_t> a32(size_t(bf16_gemm::a_size(m, k))), a16(a32.size());
    bf16_gemm::pack_a(x.data_ptr<float>(), m, k, k, a32.data());
    bf16_gemm::pack_a(bits(h), m, k, k, a16.data());
    EXPECT_EQ(a32, a16) << (on ? "vector" : "portable");
    std::vector<uint16_t> b32(size_t(bf16_gemm::b_size(m, k)), 1), b16(b32.size(), 2);
    bf16_gemm::pack_b(x.data_ptr<float>(), m, k, k, b32.data());
    bf16_gemm::pack_b(bits(h), m, k, k, b16.data());
    EXPECT_EQ(b32, b16) << (on ? "vector" : "portable");
  }
  bf16_gemm::set_vector_path(true);
}

TEST(Bf16Gemm, RoundsToNearestEvenWhenPacking) {
  // 1 + 2^-8 lies halfway between two bf16 values: it rounds to the even one (1.0); just
  // above halfway rounds up. The packed A reads back as those values.
  const float vals[4] = {1.0f + 0.00390625f, 1.0f + 0.00390625f + 1e-6f, -2.5f, 0.0f};
  uint16_t a[4];
  bf16_gemm::pack_a(vals, 1, 4, 4, a);
  EXPECT_EQ(a[0], 0x3f80);
  EXPECT_EQ(a[1], 0x3f81);
  EXPECT_EQ(a[2], 0xc020);
  EXPECT_EQ(a[3], 0x0000);
}

namespace {

// softmax(q k^T scale + bias, masked) v in fp32 from the bf16 qkv's values.
torch::Tensor reference_attention(const torch::Tensor& qkv, int64_t heads, const torch::Tensor& bias,
                                  const torch::Tensor& mask, double scale) {
  const int64_t b = qkv.size(0), n = qkv.size(1), c = qkv.size(2) / 3, d = c / heads;
  auto parts = qkv.view({b, n, 3, heads, d}).permute({2, 0, 3, 1, 4}).unbind(0);
  auto logits = torch::matmul(parts[0], parts[1].transpose(-2, -1)) * scale;
  if (bias.defined()) logits = logits + bias;
  if (mask.defined()) logits = logits.masked_fill(mask.logical_not(), -INFINITY);
  return torch::matmul(logits.softmax(-1), parts[2]).transpose(1, 2).reshape({b, n, c});
}

struct Grads {
  torch::Tensor out, dqkv, dbias;
};

Grads run_bf16(const torch::Tensor& qkv32, int64_t heads, const torch::Tensor& bias32, const torch::Tensor& mask,
               double scale, const torch::Tensor& w) {
  auto qkv = qkv32.to(torch::kBFloat16).requires_grad_(true);
  auto bias = bias32.defined() ? bias32.clone().requires_grad_(true) : torch::Tensor();
  auto out = attention_cpu(qkv, heads, bias, mask, scale);
  EXPECT_EQ(out.scalar_type(), torch::kBFloat16);
  std::vector<torch::Tensor> inputs{qkv};
  if (bias.defined()) inputs.push_back(bias);
  auto g = torch::autograd::grad({(out.to(torch::kFloat) * w).sum()}, inputs);
  EXPECT_EQ(g[0].scalar_type(), torch::kBFloat16);
  return {out.detach(), g[0], bias.defined() ? g[1] : torch::Tensor()};
}

}  // namespace

TEST(AttentionBf16, KernelAgainstTheFp32Definition) {
  // bf16 in and out: the output and the qkv gradient are rounded to bf16 (relative 2^-9),
  // and on the vector path the probabilities and score gradients are rounded too before
  // their products; against the definition computed in fp32 from the same bf16 inputs,
  // every element is within 2% of its tensor's largest. 1 and 65 tokens, odd and even
  // head widths, masks, a differentiable bias.
  struct Case {
    int64_t b, n, heads, d;
    bool bias, mask;
  };
  const std::vector<Case> cases = {{2, 1, 2, 8, false, false},  {1, 65, 4, 32, true, true}, {3, 17, 3, 5, true, false},
                                   {2, 50, 4, 32, false, false}, {1, 9, 1, 7, false, true}};
  torch::manual_seed(22);
  std::vector<bool> paths = {false};  // portable
  if (bf16_gemm::vector_available()) paths.push_back(true);
  for (bool vector : paths) {
    bf16_gemm::set_vector_path(vector);
    for (const Case& k : cases) {
      const int64_t c = k.heads * k.d;
      const double scale = 1.0 / std::sqrt(double(k.d));
      auto qkv = torch::randn({k.b, k.n, 3 * c}) * 1.5;
      auto bias = k.bias ? torch::randn({k.heads, k.n, k.n}) : torch::Tensor();
      auto mask = k.mask ? (torch::rand({k.n, k.n}) > 0.5) | torch::eye(k.n, torch::kBool) : torch::Tensor();
      auto w = torch::randn({k.b, k.n, c});
      const Grads got = run_bf16(qkv, k.heads, bias, mask, scale, w);
      auto q32 = qkv.to(torch::kBFloat16).to(torch::kFloat).requires_grad_(true);
      auto b32 = k.bias ? bias.clone().requires_grad_(true) : torch::Tensor();
      auto ref = reference_attention(q32, k.heads, b32, mask, scale);
      std::vector<torch::Tensor> inputs{q32};
      if (k.bias) inputs.push_back(b32);
      auto g = torch::autograd::grad({(ref * w).sum()}, inputs);
      const std::string what = (vector ? "vector" : "portable") + std::string(": n ") + std::to_string(k.n) +
                               " heads " + std::to_string(k.heads) + " d " + std::to_string(k.d);
      EXPECT_LT(scaled_error(got.out, ref), 2e-2) << what;
      EXPECT_LT(scaled_error(got.dqkv, g[0]), 2e-2) << what;
      if (k.bias) {
        EXPECT_LT(scaled_error(got.dbias, g[1]), 2e-2) << what;
      }
    }
  }
  bf16_gemm::set_vector_path(true);
}

TEST(AttentionBf16, VectorAndPortablePathsAgree) {
  if (!bf16_gemm::vector_available()) GTEST_SKIP() << "this CPU has no AVX512-BF16: the vector path never runs here";
  // The paths differ only in rounding the probabilities and score gradients to bf16
  // before their products: within 1% of each tensor's scale.
  torch::manual_seed(23);
  const int64_t heads = 4, n = 50, c = 128;
  auto qkv = torch::randn({4, n, 3 * c});
  auto bias = torch::randn({heads, n, n}) * 0.5;
  auto w = torch::randn({4, n, c});
  const double scale = 1.0 / std::sqrt(32.0);
  const Grads vec = run_bf16(qkv, heads, bias, {}, scale, w);
  Grads port;
  {
    PortableScope portable;
    port = run_bf16(qkv, heads, bias, {}, scale, w);
  }
  EXPECT_LT(scaled_error(vec.out, port.out), 1e-2);
  EXPECT_LT(scaled_error(vec.dqkv, port.dqkv), 1e-2);
  EXPECT_LT(scaled_error(vec.dbias, port.dbias), 1e-2);
  EXPECT_FALSE(torch::equal(vec.dqkv, port.dqkv)) << "the two paths ran the same code";
}

TEST(AttentionBf16, FullyMaskedRowGivesZeros) {
  // A query that may attend to nothing gets a zero output and passes no gradient, on both
  // paths; the other rows match the fp32 definition.
  torch::manual_seed(25);
  const int64_t b = 2, n = 6, heads = 2, d = 4, c = heads * d;
  auto mask = torch::ones({n, n}, torch::kBool);
  mask[3] = false;
  auto qkv32 = torch::randn({b, n, 3 * c});
  auto w = torch::randn({b, n, c});
  std::vector<bool> paths = {false};
  if (bf16_gemm::vector_available()) paths.push_back(true);
  for (bool vector : paths) {
    bf16_gemm::set_vector_path(vector);
    const Grads got = run_bf16(qkv32, heads, {}, mask, 0.5, w);
    EXPECT_EQ(got.out.select(1, 3).abs().max().item<float>(), 0.f) << vector;
    EXPECT_EQ(got.dqkv.select(1, 3).narrow(-1, 0, c).abs().max().item<float>(), 0.f) << vector;  // its q
    auto keep = torch::ones({n, n}, torch::kBool);
    auto ref = reference_attention(qkv32.to(torch::kBFloat16).to(torch::kFloat), heads, {}, keep, 0.5);
    auto rows = torch::tensor({0, 1, 2, 4, 5});
    EXPECT_LT(scaled_error(got.out.index_select(1, rows), ref.index_select(1, rows)), 2e-2) << vector;
    EXPECT_TRUE(torch::isfinite(got.dqkv.to(torch::kFloat)).all().item<bool>()) << vector;
  }
  bf16_gemm::set_vector_path(true);
}
