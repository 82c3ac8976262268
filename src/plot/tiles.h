#pragma once
// Grids of small pictures as one PNG, drawn with OpenCV: images, heat maps (each scaled
// to its own range, OpenCV's "inferno" colour map), or heat maps blended over
// images; a title, a label under every tile and a label in front of every row.
#include <torch/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace biaslab::plot {

struct Tile {
  torch::Tensor image;  ///< (C, H, W) uint8, C 1 or 3; undefined = heat map alone
  torch::Tensor heat;   ///< (h, w) float, resized onto the image; undefined = image alone
  std::string label;    ///< under the tile (may be empty)
};

struct TileGrid {
  std::string title;
  int64_t cols = 1;
  int64_t cell_px = 96;                 ///< side of every tile
  std::vector<std::string> row_labels;  ///< one per row (may be empty)
  std::vector<Tile> tiles;              ///< row-major
};

void draw(const TileGrid& grid, const std::filesystem::path& png);

/// Any float tensor (C, H, W) (e.g. a convolution filter) scaled to uint8 over its own
/// range (symmetric around 0 when `signed_range`).
torch::Tensor to_image(const torch::Tensor& values, bool signed_range);

}  // namespace biaslab::plot
