// Untrusted image bytes through the decoders (PNG, JPEG, WebP, GIF) and the preprocessing that
// follows (square resize or crop, and Idefics3's tiles). The whole input is the file (so real
// files are seeds as they are); its length and middle byte pick the preprocessing parameters.
// Anything but an image or a lumen::Error is a finding; so is a decoded image whose buffer does
// not match its size or that probe() sizes differently (or refuses), or a tensor with the wrong
// shape or a non-finite value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "image/decode.h"
#include "image/image_probe.h"
#include "image/image_tiling.h"
#include "image/preprocess.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto choice = static_cast<uint8_t>(size * 131 + data[size / 2]);
  std::span<const uint8_t> file(data, size);
  // Limits small enough for libFuzzer's memory cap, with the same checks as the defaults.
  lumen::image::DecodeLimits limits;
  limits.max_bytes = 1 << 20;
  limits.max_pixels = 1 << 20;
  limits.max_side = 4096;
  limits.max_jpeg_scans = 64;
  try {
    lumen::image::RgbImage image = lumen::image::decode(file, limits);
    if (image.width < 1 || image.height < 1 || image.width > limits.max_side || image.height > limits.max_side ||
        image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3) {
      std::abort();
    }
    // What decode accepts, probe must size the same from the header alone.
    lumen::image::ImageInfo info;
    try {
      info = lumen::image::probe(file, limits);
    } catch (const lumen::Error&) {
      std::abort();
    }
    if (info.width != image.width || info.height != image.height) std::abort();
    lumen::image::PreprocessParams params;
    params.size = 1 + (choice & 31);
    params.filter = lumen::image::resize_filter_from_pil(1 + (choice >> 5) % 3);
    params.mode =
        (choice & 0x80) ? lumen::image::ResizeMode::kSquare : lumen::image::ResizeMode::kShortestEdgeCenterCrop;
    lumen::image::PixelTensor tensor = lumen::image::preprocess(image, params);
    if (tensor.width != params.size || tensor.height != params.size ||
        tensor.chw.size() != static_cast<size_t>(3 * params.size * params.size)) {
      std::abort();
    }
    for (float value : tensor.chw) {
      if (!std::isfinite(value)) std::abort();
    }
    // Idefics3 splitting at a small scale: every tile has the tile's shape.
    lumen::image::TilingParams tiling;
    tiling.longest_edge = 1 + (choice & 63);
    tiling.tile_size = 1 + ((choice >> 3) & 15);
    lumen::image::TiledPixels tiles = lumen::image::split_into_tiles(image, tiling);
    size_t expected_tiles = tiles.rows == 0 ? 1 : static_cast<size_t>(tiles.rows * tiles.cols + 1);
    if (tiles.tiles.size() != expected_tiles) std::abort();
    for (const auto& tile : tiles.tiles) {
      if (tile.chw.size() != static_cast<size_t>(3 * tiling.tile_size * tiling.tile_size)) std::abort();
    }
  } catch (const lumen::Error&) {
  }
  return 0;
}
