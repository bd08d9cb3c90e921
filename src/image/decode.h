#pragma once
// Untrusted image bytes (an upload, a data: URL) to 8-bit RGB. Formats: PNG, JPEG, WebP and GIF
// (the first frame; later frames are never read). Every failure, including a size over `limits`,
// is a lumen::Error whose message a server can return as a 400 as it is.
#include <cstdint>
#include <span>

#include "image/decode_limits.h"
#include "image/rgb_image.h"

namespace lumen::image {

RgbImage decode(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

}  // namespace lumen::image
