#pragma once
// Gemma 3's pan-and-scan (transformers' Gemma3ImageProcessor, do_pan_and_scan): a wide or tall
// image is also cut into 2 to max_num_crops side-by-side (or stacked) crops, each then
// preprocessed like the whole image, so a long image is seen at more than one 896-pixel square.
// The crop count and sizes follow the processor's arithmetic exactly (the number nearest the
// aspect ratio, rounded half up, then clamped; crop sides rounded up, the last crop cut at the
// border), because the prompt's image count depends on it.
#include <vector>

#include "image/rgb_image.h"

namespace lumen::image {

struct PanAndScanParams {
  int min_crop_size = 256;             // no crop side below this (else no crops at all)
  int max_num_crops = 4;               // at most this many crops
  double min_ratio_to_activate = 1.2;  // only images at least this much wider than tall (or taller)
};

// The crops, left to right or top to bottom; none when the image is not long enough or the
// crops would be too small. Throws lumen::Error on parameters the processor would not accept
// (min_crop_size < 1, max_num_crops < 2, a ratio below 1).
std::vector<RgbImage> pan_and_scan_crops(const RgbImage& image, const PanAndScanParams& params = {});

}  // namespace lumen::image
