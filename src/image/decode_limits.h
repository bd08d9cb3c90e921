#pragma once
// What one untrusted image may cost, checked before anything is allocated for its pixels: the
// encoded size, and the width and height its header declares (a 65535 x 65535 PNG is a few
// hundred bytes). Decoding time is then linear in bytes plus pixels.
#include <cstddef>
#include <cstdint>

namespace lumen::image {

struct DecodeLimits {
  // Encoded bytes (OpenAI's own image limit is 20 MB).
  size_t max_bytes = 20u << 20;
  // Decoded pixels: 32 Mi pixels is 96 MiB of RGB, plus a same-sized RGBA or coefficient buffer
  // inside the decoder (16 bits a coefficient for a progressive JPEG).
  int64_t max_pixels = int64_t{1} << 25;
  // Either side; keeps a 1 x 30 000 000 strip (fine by pixel count) out of the resizer.
  int max_side = 16384;
  // A progressive JPEG re-walks its whole coefficient buffer on every scan; a hostile file can
  // declare thousands of tiny scans. Real encoders write about 10.
  int max_jpeg_scans = 256;
};

// Refuses a declared size over the limits (or not positive), naming the format: called by each
// decoder after reading the header and before allocating.
void check_dimensions(const char* format, int64_t width, int64_t height, const DecodeLimits& limits);

}  // namespace lumen::image
