#include "image/preprocess.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lumen::image {

namespace {

constexpr int kMaxSize = 8192;

void check_params(const PreprocessParams& params) {
  if (params.size < 1 || params.size > kMaxSize) fail("image size {} is out of range (1 to {})", params.size, kMaxSize);
  for (float s : params.std) {
    if (!(std::isfinite(s) && s != 0.0f)) fail("the image standard deviation must be finite and non-zero");
  }
  for (float m : params.mean) {
    if (!std::isfinite(m)) fail("the image mean must be finite");
  }
  if (!std::isfinite(params.rescale_factor)) fail("the image rescale factor must be finite");
}

// transformers' get_resize_output_image_size with default_to_square=False: the short side
// becomes `size`, the long one int(size * long / short) (truncated, in double as Python does).
std::pair<int, int> shortest_edge_size(int width, int height, int size) {
  bool wide = width >= height;
  int short_side = wide ? height : width, long_side = wide ? width : height;
  int new_long = static_cast<int>(static_cast<double>(int64_t{size} * long_side) / short_side);
  new_long = std::clamp(new_long, 1, kMaxSize);  // a 1 x 16384 strip would otherwise ask for more
  return wide ? std::pair{new_long, size} : std::pair{size, new_long};
}

}  // namespace

RgbImage center_crop(const RgbImage& image, int width, int height) {
  if (width < 1 || height < 1 || width > kMaxSize || height > kMaxSize) {
    fail("cannot crop an image to {} x {}", width, height);
  }
  RgbImage out{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, 0)};
  // Python's floor division; a negative offset means the image is smaller than the crop (then
  // transformers centres it with ceil((crop - size) / 2) of padding first, i.e. -offset).
  auto floor_half = [](int diff) { return diff >= 0 ? diff / 2 : -((-diff + 1) / 2); };
  int left = floor_half(image.width - width), top = floor_half(image.height - height);
  for (int y = 0; y < height; ++y) {
    int sy = y + top;
    if (sy < 0 || sy >= image.height) continue;
    for (int x = 0; x < width; ++x) {
      int sx = x + left;
      if (sx < 0 || sx >= image.width) continue;
      for (int c = 0; c < 3; ++c) {
        out.rgb[(static_cast<size_t>(y) * width + x) * 3 + c] =
            image.rgb[(static_cast<size_t>(sy) * image.width + sx) * 3 + c];
      }
    }
  }
  return out;
}

PixelTensor to_pixel_tensor(const RgbImage& image, const PreprocessParams& params) {
  check_params(params);
  size_t plane = static_cast<size_t>(image.width) * image.height;
  PixelTensor out{image.width, image.height, std::vector<float>(plane * 3)};
  for (int c = 0; c < 3; ++c) {
    for (size_t i = 0; i < plane; ++i) {
      // transformers rescales in double and stores float32, then normalises in float32.
      auto scaled = static_cast<float>(image.rgb[i * 3 + c] * params.rescale_factor);
      out.chw[c * plane + i] = (scaled - params.mean[c]) / params.std[c];
    }
  }
  return out;
}

PixelTensor preprocess(const RgbImage& image, const PreprocessParams& params) {
  check_params(params);
  if (image.width < 1 || image.height < 1) fail("cannot preprocess an empty image");
  if (params.mode == ResizeMode::kSquare) {
    return to_pixel_tensor(resize(image, params.size, params.size, params.filter), params);
  }
  auto [width, height] = shortest_edge_size(image.width, image.height, params.size);
  RgbImage resized = resize(image, width, height, params.filter);
  return to_pixel_tensor(center_crop(resized, params.size, params.size), params);
}

}  // namespace lumen::image
