#pragma once
// An image's format and size from its header alone, with the same limits decode() applies, so a
// caller can refuse an image, or count the tokens and tiles it will cost, before paying for the
// decode. For every file decode() accepts, probe() gives the size decode() returns (the fuzz
// target checks this); probe() may accept a file whose pixel data decode() then finds broken.
#include <cstdint>
#include <span>

#include "image/decode_limits.h"
#include "image/image_format.h"

namespace lumen::image {

struct ImageInfo {
  Format format = Format::kUnknown;
  int width = 0, height = 0;  // of the image decode() returns (a GIF's or animation's canvas)
};

ImageInfo probe(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});

}  // namespace lumen::image
