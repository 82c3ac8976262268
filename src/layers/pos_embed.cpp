#include "layers/pos_embed.h"

#include <torch/torch.h>

namespace biaslab {

torch::Tensor sincos_2d_pos_embed(int64_t grid, int64_t dim, bool cls_token) {
  TORCH_CHECK(dim % 4 == 0, "sincos2d positional embedding needs a width divisible by 4, got ", dim);
  const int64_t quarter = dim / 4;
  auto omega = torch::pow(10000.0, -torch::arange(quarter, torch::kDouble) / double(quarter));  // (D/4)
  auto pos = torch::arange(grid, torch::kDouble);
  auto angles = torch::outer(pos, omega);                                  // (grid, D/4)
  auto enc = torch::cat({angles.sin(), angles.cos()}, 1);                  // (grid, D/2)
  auto rows = enc.unsqueeze(1).expand({grid, grid, dim / 2});              // row r of token (r, c)
  auto cols = enc.unsqueeze(0).expand({grid, grid, dim / 2});              // column c
  auto table = torch::cat({rows, cols}, 2).reshape({grid * grid, dim});    // row-major tokens
  if (cls_token) table = torch::cat({torch::zeros({1, dim}, torch::kDouble), table}, 0);
  return table.unsqueeze(0).to(torch::kFloat);
}

}  // namespace biaslab
