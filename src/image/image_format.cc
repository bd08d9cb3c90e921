#include "image/image_format.h"

#include <cstring>

namespace lumen::image {

namespace {

bool starts_with(std::span<const uint8_t> bytes, const char* magic, size_t length, size_t offset = 0) {
  return bytes.size() >= offset + length && std::memcmp(bytes.data() + offset, magic, length) == 0;
}

}  // namespace

Format sniff_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n", 8)) return Format::kPng;
  // SOI then the first marker's 0xFF (JFIF, Exif and bare JPEGs all start so).
  if (starts_with(bytes, "\xff\xd8\xff", 3)) return Format::kJpeg;
  if (starts_with(bytes, "RIFF", 4) && starts_with(bytes, "WEBP", 4, 8)) return Format::kWebp;
  if (starts_with(bytes, "GIF87a", 6) || starts_with(bytes, "GIF89a", 6)) return Format::kGif;
  return Format::kUnknown;
}

std::string_view format_name(Format format) {
  switch (format) {
    case Format::kPng: return "PNG";
    case Format::kJpeg: return "JPEG";
    case Format::kWebp: return "WebP";
    case Format::kGif: return "GIF";
    case Format::kUnknown: break;
  }
  return "unknown";
}

}  // namespace lumen::image
