#pragma once
// Which decoder an upload goes to, told by its magic bytes (never by a file name or a MIME type a
// client sent, which may lie).
#include <cstdint>
#include <span>
#include <string_view>

namespace lumen::image {

enum class Format { kUnknown, kPng, kJpeg, kWebp, kGif };

Format sniff_format(std::span<const uint8_t> bytes);
std::string_view format_name(Format format);

}  // namespace lumen::image
