#pragma once
// Transparency onto white, as Hugging Face's image processors do it (transformers'
// convert_to_rgb: Pillow's alpha_composite of the picture over an opaque white background),
// with Pillow's integer rounding so the pixels match the reference exactly.
#include <cstdint>
#include <span>

#include "image/rgb_image.h"

namespace lumen::image {

// One colour channel `value` with opacity `alpha` over white.
uint8_t over_white(uint8_t value, uint8_t alpha);

// RGBA rows (4 bytes a pixel) to an RgbImage of the same size.
RgbImage composite_on_white(int width, int height, std::span<const uint8_t> rgba);

}  // namespace lumen::image
