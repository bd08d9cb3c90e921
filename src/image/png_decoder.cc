// PNG through libpng (Debian's libpng-dev). libpng reports errors by longjmp, so its calls live in
// small functions that own no C++ objects (a longjmp would skip their destructors); the pixel
// buffer is allocated by the caller between the header and the pixel reads.
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "image/alpha_composite.h"
#include "image/format_decoders.h"
#include "util/error.h"

namespace lumen::image {

namespace {

// Ancillary chunks (text, ICC profiles) a file may make libpng allocate, and how many.
constexpr png_alloc_size_t kMaxChunkBytes = 4u << 20;
constexpr png_uint_32 kMaxAncillaryChunks = 256;

struct PngInput {
  const uint8_t* data;
  size_t size;
  size_t offset;
  char message[200];
};

void read_bytes(png_structp png, png_bytep out, size_t length) {
  auto* input = static_cast<PngInput*>(png_get_io_ptr(png));
  if (length > input->size - input->offset) png_error(png, "the file is truncated");
  std::memcpy(out, input->data + input->offset, length);
  input->offset += length;
}

void on_error(png_structp png, png_const_charp message) {
  auto* input = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(input->message, sizeof input->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // ancillary-chunk trouble; Pillow ignores it too

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  int channels = 0;     // 3 (RGB) or 4 (RGBA) after the transforms; 1 or 2 for 16-bit gray
  bool gray16 = false;  // 16-bit gray (with tRNS as a second channel): samples left 16-bit
};

// Reads up to the first image data and sets the transforms to 8-bit RGB(A): palettes and low bit
// depths expanded, tRNS to alpha, 16-bit samples cut to their high byte, gray replicated. All as
// Pillow reads them, but for 16-bit gray, which Pillow opens as "I;16" and converts to RGB by
// clamping each value to 255 (not by taking the high byte): those samples stay 16-bit here and
// gray16_to_rgb clamps them the same way. Returns false on error (the message in input).
bool read_header(png_structp png, png_infop info, int max_side, PngHeader* header) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_user_limits(png, static_cast<png_uint_32>(max_side), static_cast<png_uint_32>(max_side));
  png_set_chunk_malloc_max(png, kMaxChunkBytes);
  png_set_chunk_cache_max(png, kMaxAncillaryChunks);
  png_read_info(png, info);
  header->gray16 = png_get_color_type(png, info) == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) == 16;
  png_set_expand(png);
  if (!header->gray16) {
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  header->width = png_get_image_width(png, info);
  header->height = png_get_image_height(png, info);
  header->channels = png_get_channels(png, info);
  return true;
}

bool read_pixels(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

// 16-bit gray rows (big-endian, with a transparency channel when the file has tRNS) to RGB the
// way Pillow's "I;16" to RGB conversion does it: each value clamped to 255.
RgbImage gray16_to_rgb(int width, int height, int channels, const std::vector<uint8_t>& samples) {
  size_t pixels = static_cast<size_t>(width) * static_cast<size_t>(height);
  auto sample = [&](size_t index) { return (samples[index * 2] << 8) | samples[index * 2 + 1]; };
  RgbImage out{width, height, std::vector<uint8_t>(pixels * 3)};
  for (size_t i = 0; i < pixels; ++i) {
    auto gray = static_cast<uint8_t>(std::min(sample(i * channels), 255));
    bool clear = channels == 2 && sample(i * 2 + 1) == 0;  // tRNS: fully transparent, over white
    out.rgb[i * 3] = out.rgb[i * 3 + 1] = out.rgb[i * 3 + 2] = clear ? 255 : gray;
  }
  return out;
}

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngReader() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

}  // namespace

RgbImage decode_png(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  // The size from IHDR (which the PNG spec puts first, at byte 16) before libpng starts, so a
  // refusal names the size; libpng's own user limits below stay as a backstop.
  constexpr size_t kIhdrEnd = 33;
  if (bytes.size() < kIhdrEnd || std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) {
    fail("the PNG image is truncated or does not start with its IHDR header");
  }
  auto be32 = [&](size_t at) {
    return int64_t{bytes[at]} << 24 | int64_t{bytes[at + 1]} << 16 | int64_t{bytes[at + 2]} << 8 | bytes[at + 3];
  };
  check_dimensions("PNG", be32(16), be32(20), limits);

  PngInput input{bytes.data(), bytes.size(), 0, {}};
  PngReader reader;
  reader.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, on_error, on_warning);
  if (!reader.png) fail("cannot start the PNG decoder (out of memory)");
  reader.info = png_create_info_struct(reader.png);
  if (!reader.info) fail("cannot start the PNG decoder (out of memory)");
  png_set_read_fn(reader.png, &input, read_bytes);

  PngHeader header;
  if (!read_header(reader.png, reader.info, limits.max_side, &header)) {
    fail("the PNG image cannot be read: {}", input.message);
  }
  check_dimensions("PNG", header.width, header.height, limits);
  int sample_bytes = header.gray16 ? 2 : 1;
  bool expected =
      header.gray16 ? (header.channels == 1 || header.channels == 2) : (header.channels == 3 || header.channels == 4);
  if (!expected) fail("the PNG image has {} channels after conversion (expected RGB or RGBA)", header.channels);
  size_t row_bytes = size_t{header.width} * header.channels * sample_bytes;
  if (png_get_rowbytes(reader.png, reader.info) != row_bytes) fail("the PNG image has an unexpected row size");
  std::vector<uint8_t> pixels(row_bytes * header.height);
  std::vector<png_bytep> rows(header.height);
  for (png_uint_32 y = 0; y < header.height; ++y) rows[y] = pixels.data() + y * row_bytes;
  if (!read_pixels(reader.png, rows.data())) fail("the PNG image cannot be read: {}", input.message);

  int width = static_cast<int>(header.width), height = static_cast<int>(header.height);
  if (header.gray16) return gray16_to_rgb(width, height, header.channels, pixels);
  if (header.channels == 4) return composite_on_white(width, height, pixels);
  return RgbImage{width, height, std::move(pixels)};
}

}  // namespace lumen::image
