#pragma once
// Idefics3 / SmolVLM's image splitting, as transformers' Idefics3 image processor (PIL path) does
// it: the image is resized so its longest side is `longest_edge` (up or down, the other side
// even), then up to whole multiples of the tile size, cut into rows x cols tiles in reading
// order, and followed by the whole image resized to one tile (the "global" image). An image
// that is one tile after the resizing is not split (rows = cols = 0, the global image alone).
// The number of tiles depends only on the image's size and the parameters, so it is bounded by
// them: at most ceil(longest_edge / tile_size)^2 + 1 tiles, and max_tiles refuses more.
#include <vector>

#include "image/preprocess.h"

namespace lumen::image {

struct TilingParams {
  int longest_edge = 4 * 364;  // the resize before splitting (Idefics3: 1456; SmolVLM: 2048)
  int tile_size = 364;         // the encoder's input side (Idefics3: 364; SmolVLM: 384 or 512)
  int max_tiles = 145;         // rows * cols + 1 at most; Idefics3's defaults give 4 x 4 + 1
  ResizeFilter filter = ResizeFilter::kLanczos;
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> std{0.5f, 0.5f, 0.5f};
};

struct TiledPixels {
  int rows = 0, cols = 0;          // 0 x 0 when the image was not split
  std::vector<PixelTensor> tiles;  // rows * cols tiles in reading order, then the global image
};

// The (width, height) an image of this size is resized to before it is cut (both multiples of
// tile_size); throws when the tiles would be more than max_tiles. Needs no pixels.
std::pair<int, int> tiled_size(int width, int height, const TilingParams& params);

TiledPixels split_into_tiles(const RgbImage& image, const TilingParams& params);

}  // namespace lumen::image
