#include "image/pan_and_scan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/error.h"

namespace lumen::image {
namespace {

// The crop of `image` at (x, y), at most width x height, cut at the image's border (as a numpy
// slice past the end is).
RgbImage crop(const RgbImage& image, int x, int y, int width, int height) {
  width = std::min(width, image.width - x);
  height = std::min(height, image.height - y);
  RgbImage out{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  for (int row = 0; row < height; ++row) {
    std::memcpy(out.rgb.data() + static_cast<size_t>(row) * width * 3,
                image.rgb.data() + (static_cast<size_t>(y + row) * image.width + x) * 3,
                static_cast<size_t>(width) * 3);
  }
  return out;
}

// The processor's count along the long side: the aspect ratio rounded half up, no more than the
// long side holds crops of min_crop_size, then into [2, max_num_crops].
int crop_count(int longer, int shorter, const PanAndScanParams& p) {
  int n = static_cast<int>(std::floor(static_cast<double>(longer) / shorter + 0.5));
  n = std::min(longer / p.min_crop_size, n);
  return std::min(p.max_num_crops, std::max(2, n));
}

}  // namespace

std::vector<RgbImage> pan_and_scan_crops(const RgbImage& image, const PanAndScanParams& params) {
  if (params.min_crop_size < 1 || params.max_num_crops < 2 || !(params.min_ratio_to_activate >= 1.0)) {
    throw Error(
        "pan-and-scan: min_crop_size must be at least 1, max_num_crops at least 2 and "
        "min_ratio_to_activate at least 1");
  }
  if (image.width < 1 || image.height < 1) return {};
  const int w = image.width, h = image.height;
  int crops_w = 1, crops_h = 1;
  if (w >= h) {
    if (static_cast<double>(w) / h < params.min_ratio_to_activate) return {};
    crops_w = crop_count(w, h, params);
  } else {
    if (static_cast<double>(h) / w < params.min_ratio_to_activate) return {};
    crops_h = crop_count(h, w, params);
  }
  const int crop_w = (w + crops_w - 1) / crops_w, crop_h = (h + crops_h - 1) / crops_h;
  if (std::min(crop_w, crop_h) < params.min_crop_size) return {};
  std::vector<RgbImage> out;
  for (int i = 0; i < crops_h; ++i) {
    for (int j = 0; j < crops_w; ++j) {
      // Rounding the sides up can put a last crop past the border (9 wide in 4 crops of 3): the
      // processor's slice would be empty and fail in its resize; it is left out here.
      if (j * crop_w < w && i * crop_h < h) out.push_back(crop(image, j * crop_w, i * crop_h, crop_w, crop_h));
    }
  }
  return out;
}

}  // namespace lumen::image
