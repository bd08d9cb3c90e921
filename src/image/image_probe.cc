#include "image/image_probe.h"

#include <webp/decode.h>

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace lumen::image {

namespace {

// Reads big- or little-endian fields with bounds checks; a read past the end is a truncated file.
struct Reader {
  std::span<const uint8_t> bytes;
  const char* format;
  size_t at = 0;

  void need(size_t count) const {
    if (count > bytes.size() || at > bytes.size() - count) fail("the {} image is truncated", format);
  }
  uint8_t u8() {
    need(1);
    return bytes[at++];
  }
  uint32_t be16() {
    need(2);
    uint32_t value = uint32_t{bytes[at]} << 8 | bytes[at + 1];
    at += 2;
    return value;
  }
  uint32_t le16() {
    need(2);
    uint32_t value = uint32_t{bytes[at + 1]} << 8 | bytes[at];
    at += 2;
    return value;
  }
  void skip(size_t count) {
    need(count);
    at += count;
  }
};

ImageInfo probe_png(std::span<const uint8_t> bytes) {
  Reader in{bytes, "PNG", 8};
  in.need(25);  // IHDR's length, type, width and height
  if (std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) fail("the PNG image does not start with its IHDR header");
  in.skip(8);
  uint32_t width = in.be16() << 16;
  width |= in.be16();
  uint32_t height = in.be16() << 16;
  height |= in.be16();
  return {Format::kPng, static_cast<int>(std::min<uint32_t>(width, INT32_MAX)),
          static_cast<int>(std::min<uint32_t>(height, INT32_MAX))};
}

// The first start-of-frame marker's size, as libjpeg reads it: every marker before it skipped by
// its length, and stray bytes between markers passed over as libjpeg passes over them.
ImageInfo probe_jpeg(std::span<const uint8_t> bytes) {
  Reader in{bytes, "JPEG", 2};
  for (;;) {
    while (in.u8() != 0xff) {
    }
    uint8_t marker = in.u8();
    while (marker == 0xff) marker = in.u8();  // fill bytes
    if (marker == 0) continue;                // FF 00 is stuffed data, not a marker
    bool frame = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (marker == 0xd9 || marker == 0xda) fail("the JPEG image has no frame header");
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue;  // markers without a length
    // libjpeg takes a length below 2 (which counts itself) as nothing to skip.
    uint32_t length = in.be16();
    if (frame) {
      in.skip(1);  // sample precision
      uint32_t height = in.be16();
      uint32_t width = in.be16();
      return {Format::kJpeg, static_cast<int>(width), static_cast<int>(height)};
    }
    if (length > 2) in.skip(length - 2);
  }
}

ImageInfo probe_webp(std::span<const uint8_t> bytes) {
  WebPBitstreamFeatures features;
  VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status == VP8_STATUS_NOT_ENOUGH_DATA) fail("the WebP image is truncated");
  if (status != VP8_STATUS_OK) fail("the WebP image cannot be read (status {})", static_cast<int>(status));
  return {Format::kWebp, features.width, features.height};
}

// The screen, grown to hold the first frame as the decoder (and Pillow) grows it.
ImageInfo probe_gif(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  Reader in{bytes, "GIF", 6};
  uint32_t screen_width = in.le16(), screen_height = in.le16();
  uint8_t flags = in.u8();
  in.skip(2);
  check_dimensions("GIF", screen_width, screen_height, limits);
  if (flags & 0x80) in.skip(3u << ((flags & 7) + 1));  // the global palette
  for (;;) {
    uint8_t record = in.u8();
    if (record == 0x3b) fail("the GIF image has no frame");
    if (record == 0x21) {  // an extension: its label, then sub-blocks up to an empty one
      in.skip(1);
      for (uint8_t size = in.u8(); size != 0; size = in.u8()) in.skip(size);
      continue;
    }
    if (record != 0x2c) fail("the GIF image has an unknown record type");
    uint32_t left = in.le16(), top = in.le16(), width = in.le16(), height = in.le16();
    check_dimensions("GIF frame", width, height, limits);
    return {Format::kGif, static_cast<int>(std::max(screen_width, left + width)),
            static_cast<int>(std::max(screen_height, top + height))};
  }
}

}  // namespace

ImageInfo probe(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  if (bytes.empty()) fail("the image is empty (0 bytes)");
  if (bytes.size() > limits.max_bytes) {
    fail("the image is {} bytes; at most {} bytes are accepted", bytes.size(), limits.max_bytes);
  }
  ImageInfo info;
  switch (sniff_format(bytes)) {
    case Format::kPng: info = probe_png(bytes); break;
    case Format::kJpeg: info = probe_jpeg(bytes); break;
    case Format::kWebp: info = probe_webp(bytes); break;
    case Format::kGif: info = probe_gif(bytes, limits); break;
    case Format::kUnknown: fail("the image format is not recognised (PNG, JPEG, WebP and GIF are accepted)");
  }
  check_dimensions(format_name(info.format).data(), info.width, info.height, limits);
  return info;
}

}  // namespace lumen::image
