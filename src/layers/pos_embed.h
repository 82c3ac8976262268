#pragma once
// Fixed 2-D sine-cosine positional embedding (as in MAE, He et al. 2022,
// arXiv:2111.06377): the first half of the channels encodes the patch row, the second
// half the column, each as [sin(p w_i), cos(p w_i)] with w_i = 10000^(-i / (D/4)).
#include <torch/types.h>

namespace biaslab {

/// (1, grid*grid (+1), dim); with `cls_token` the first row (the class token) is zero.
/// `dim` must be divisible by 4.
torch::Tensor sincos_2d_pos_embed(int64_t grid, int64_t dim, bool cls_token);

}  // namespace biaslab
