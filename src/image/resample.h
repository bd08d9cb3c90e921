#pragma once
// Resizing as Pillow's Image.resize does it on 8-bit RGB, to the bit: Hugging Face's image
// processors (the reference for every vision encoder) resize through Pillow, and one level of
// difference in a pixel is already 0.015 after CLIP's normalisation, fifteen times the 1e-3 the
// pixel tensors must match to. So the same separable convolution: filter weights in double,
// turned into 22-bit fixed point, a horizontal pass then a vertical one, each rounded and
// clamped to 8 bits.
#include "image/rgb_image.h"

namespace lumen::image {

// Pillow's filters (Image.Resampling; the numbers are its own, which preprocessor_config.json
// files and GGUF metadata use).
enum class ResizeFilter { kLanczos = 1, kBilinear = 2, kBicubic = 3 };

// Refuses a filter number that is none of the above.
ResizeFilter resize_filter_from_pil(int number);

// `image` scaled to width x height (each 1 to 8192).
RgbImage resize(const RgbImage& image, int width, int height, ResizeFilter filter);

}  // namespace lumen::image
