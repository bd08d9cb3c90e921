#include "image/decode.h"

#include "image/format_decoders.h"
#include "image/image_format.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::image {

void check_dimensions(const char* format, int64_t width, int64_t height, const DecodeLimits& limits) {
  if (width <= 0 || height <= 0) fail("the {} image declares an empty size ({} x {})", format, width, height);
  if (width > limits.max_side || height > limits.max_side) {
    fail("the {} image is {} x {} pixels; each side may be at most {}", format, width, height, limits.max_side);
  }
  auto pixels = checked_mul(width, height);
  if (!pixels || *pixels > limits.max_pixels) {
    fail("the {} image is {} x {} pixels; at most {} pixels are accepted", format, width, height, limits.max_pixels);
  }
}

RgbImage decode(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.empty()) fail("the image is empty (0 bytes)");
  if (bytes.size() > limits.max_bytes) {
    fail("the image is {} bytes; at most {} bytes are accepted", bytes.size(), limits.max_bytes);
  }
  switch (sniff_format(bytes)) {
    case Format::kPng: return decode_png(bytes, limits);
    case Format::kJpeg: return decode_jpeg(bytes, limits);
    case Format::kWebp: return decode_webp(bytes, limits);
    case Format::kGif: return decode_gif(bytes, limits);
    case Format::kUnknown: break;
  }
  fail("the image format is not recognised (PNG, JPEG, WebP and GIF are accepted)");
}

}  // namespace lumen::image
