#include "image/image_tiling.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lumen::image {

namespace {

// transformers caps the resized image at 4096 a side (Idefics3's MAX_IMAGE_SIZE).
constexpr int kMaxResizedSide = 4096;

void check_params(const TilingParams& params) {
  if (params.tile_size < 1 || params.tile_size > kMaxResizedSide) {
    fail("tile size {} is out of range (1 to {})", params.tile_size, kMaxResizedSide);
  }
  if (params.longest_edge < 1 || params.longest_edge > kMaxResizedSide) {
    fail("longest edge {} is out of range (1 to {})", params.longest_edge, kMaxResizedSide);
  }
  if (params.max_tiles < 1) fail("max_tiles must be at least 1");
}

// The longest side to `max_len`, the other by the aspect ratio, truncated, then made even
// (transformers' _resize_output_size_rescale_to_max_len), then both capped at 4096.
std::pair<int, int> longest_edge_size(int width, int height, int max_len) {
  double aspect = static_cast<double>(width) / height;
  int w = width, h = height;
  if (w >= h) {
    w = max_len;
    h = static_cast<int>(w / aspect);
    if (h % 2 != 0) ++h;
  } else {
    h = max_len;
    w = static_cast<int>(h * aspect);
    if (w % 2 != 0) ++w;
  }
  w = std::max(w, 1), h = std::max(h, 1);
  aspect = static_cast<double>(w) / h;
  if (w >= h && w > kMaxResizedSide) {
    w = kMaxResizedSide;
    h = static_cast<int>(w / aspect);
  } else if (h > w && h > kMaxResizedSide) {
    h = kMaxResizedSide;
    w = static_cast<int>(h * aspect);
  }
  return {std::max(w, 1), std::max(h, 1)};
}

// Up to whole tiles: the longer side first, the other from the aspect ratio
// (transformers' resize_for_vision_encoder).
std::pair<int, int> whole_tiles_size(int width, int height, int tile) {
  double aspect = static_cast<double>(width) / height;
  auto round_up = [tile](double side) { return static_cast<int>(std::ceil(side / tile)) * tile; };
  if (width >= height) {
    int w = round_up(width);
    return {w, round_up(static_cast<int>(w / aspect))};
  }
  int h = round_up(height);
  return {round_up(static_cast<int>(h * aspect)), h};
}

RgbImage crop(const RgbImage& image, int left, int top, int side) {
  RgbImage out{side, side, std::vector<uint8_t>(static_cast<size_t>(side) * side * 3)};
  for (int y = 0; y < side; ++y) {
    const uint8_t* from = &image.rgb[(static_cast<size_t>(top + y) * image.width + left) * 3];
    std::copy(from, from + static_cast<size_t>(side) * 3, &out.rgb[static_cast<size_t>(y) * side * 3]);
  }
  return out;
}

}  // namespace

std::pair<int, int> tiled_size(int width, int height, const TilingParams& params) {
  check_params(params);
  if (width < 1 || height < 1) fail("cannot split an empty image");
  auto [w, h] = longest_edge_size(width, height, params.longest_edge);
  auto [tw, th] = whole_tiles_size(w, h, params.tile_size);
  int64_t tiles = int64_t{tw / params.tile_size} * (th / params.tile_size);
  if (tiles > 1) ++tiles;  // the global image
  if (tw > kMaxResizedSide + params.tile_size || th > kMaxResizedSide + params.tile_size || tiles > params.max_tiles) {
    fail("the image would be split into {} tiles; at most {} are accepted", tiles, params.max_tiles);
  }
  return {tw, th};
}

TiledPixels split_into_tiles(const RgbImage& image, const TilingParams& params) {
  auto [tw, th] = tiled_size(image.width, image.height, params);
  auto [w, h] = longest_edge_size(image.width, image.height, params.longest_edge);
  // Two resizes, as the reference does them (each rounds to 8 bits; one resize straight to the
  // final size would differ in the last bit).
  RgbImage resized = resize(resize(image, w, h, params.filter), tw, th, params.filter);

  PreprocessParams normalise;
  normalise.rescale_factor = params.rescale_factor;
  normalise.mean = params.mean;
  normalise.std = params.std;
  const int tile = params.tile_size;
  TiledPixels out;
  if (tw > tile || th > tile) {
    out.rows = th / tile;
    out.cols = tw / tile;
    for (int r = 0; r < out.rows; ++r) {
      for (int c = 0; c < out.cols; ++c) {
        out.tiles.push_back(to_pixel_tensor(crop(resized, c * tile, r * tile, tile), normalise));
      }
    }
    resized = resize(resized, tile, tile, params.filter);
  }
  out.tiles.push_back(to_pixel_tensor(resized, normalise));
  return out;
}

}  // namespace lumen::image
