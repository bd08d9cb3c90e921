#include "image/alpha_composite.h"

namespace lumen::image {

uint8_t over_white(uint8_t value, uint8_t alpha) {
  // Pillow blends with 7 extra bits of precision and divides by 255 with a shift-and-add; over
  // an opaque background the weights reduce to alpha and 255 - alpha (times 128). Doing the
  // plain (v*a + 255*(255-a)) / 255 instead differs by one level on some pixels.
  constexpr uint32_t kExtraBits = 7;
  if (alpha == 0) return 255;
  uint32_t blended = (uint32_t{value} * alpha + 255u * (255u - alpha)) << kExtraBits;
  uint32_t rounded = blended + (0x80u << kExtraBits);
  return static_cast<uint8_t>((((rounded >> 8) + rounded) >> 8) >> kExtraBits);
}

RgbImage composite_on_white(int width, int height, std::span<const uint8_t> rgba) {
  RgbImage out{width, height, {}};
  size_t pixels = static_cast<size_t>(width) * static_cast<size_t>(height);
  out.rgb.resize(pixels * 3);
  for (size_t i = 0; i < pixels; ++i) {
    uint8_t alpha = rgba[i * 4 + 3];
    for (size_t c = 0; c < 3; ++c) out.rgb[i * 3 + c] = over_white(rgba[i * 4 + c], alpha);
  }
  return out;
}

}  // namespace lumen::image
