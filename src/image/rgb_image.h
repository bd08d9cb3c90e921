#pragma once
// A decoded picture as every vision encoder takes it: 8-bit RGB, no alpha (transparency has
// already been composited onto white, as Hugging Face's image processors do).
#include <cstdint>
#include <vector>

namespace lumen::image {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes a pixel, width * height * 3 bytes
};

}  // namespace lumen::image
