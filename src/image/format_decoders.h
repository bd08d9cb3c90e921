#pragma once
// One decoder per format, behind decode() (which has checked the byte size and the magic bytes).
// Each reads its header first and calls check_dimensions before allocating pixels.
#include <cstdint>
#include <span>

#include "image/decode_limits.h"
#include "image/rgb_image.h"

namespace lumen::image {

RgbImage decode_png(std::span<const uint8_t> bytes, const DecodeLimits& limits);
RgbImage decode_jpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits);
RgbImage decode_webp(std::span<const uint8_t> bytes, const DecodeLimits& limits);
RgbImage decode_gif(std::span<const uint8_t> bytes, const DecodeLimits& limits);

}  // namespace lumen::image
