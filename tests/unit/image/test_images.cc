#include "unit/image/test_images.h"

#include <zlib.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace lumen::image::testing {

namespace {

void put_be32(std::vector<uint8_t>& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(value >> shift));
}

void put_le16(std::vector<uint8_t>& out, int value) {
  out.push_back(static_cast<uint8_t>(value & 0xff));
  out.push_back(static_cast<uint8_t>((value >> 8) & 0xff));
}

void put_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::vector<uint8_t> typed(type, type + 4);
  typed.insert(typed.end(), data.begin(), data.end());
  out.insert(out.end(), typed.begin(), typed.end());
  put_be32(out, static_cast<uint32_t>(crc32(0, typed.data(), static_cast<uInt>(typed.size()))));
}

// LZW data for `count` pixels of one index with a 2-bit minimum code size: a clear code before
// each literal keeps every code 3 bits wide, then end-of-information.
std::vector<uint8_t> lzw_run(int count, int index) {
  constexpr int kClear = 4, kEnd = 5, kBits = 3;
  std::vector<uint8_t> bytes;
  uint32_t buffer = 0;
  int filled = 0;
  auto put = [&](int code) {
    buffer |= static_cast<uint32_t>(code) << filled;
    filled += kBits;
    while (filled >= 8) {
      bytes.push_back(static_cast<uint8_t>(buffer & 0xff));
      buffer >>= 8;
      filled -= 8;
    }
  };
  for (int i = 0; i < count; ++i) put(kClear), put(index);
  put(kEnd);
  if (filled > 0) bytes.push_back(static_cast<uint8_t>(buffer & 0xff));
  return bytes;
}

}  // namespace

std::filesystem::path golden_dir() { return std::filesystem::path(LUMEN_IMAGE_GOLDEN_DIR); }

std::vector<uint8_t> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> make_png(uint32_t width, uint32_t height, int color_type, int bit_depth,
                              const std::vector<uint8_t>& scanlines, int gray16_transparent, bool interlaced) {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> header;
  put_be32(header, width);
  put_be32(header, height);
  header.insert(header.end(), {static_cast<uint8_t>(bit_depth), static_cast<uint8_t>(color_type), 0, 0,
                               interlaced ? uint8_t{1} : uint8_t{0}});
  put_chunk(out, "IHDR", header);
  if (gray16_transparent >= 0) {
    put_chunk(out, "tRNS", {static_cast<uint8_t>(gray16_transparent >> 8), static_cast<uint8_t>(gray16_transparent)});
  }
  uLongf packed_size = compressBound(static_cast<uLong>(scanlines.size()));
  std::vector<uint8_t> packed(packed_size);
  if (compress2(packed.data(), &packed_size, scanlines.data(), static_cast<uLong>(scanlines.size()), 9) != Z_OK) {
    throw std::runtime_error("zlib compress2 failed");
  }
  packed.resize(packed_size);
  put_chunk(out, "IDAT", packed);
  put_chunk(out, "IEND", {});
  return out;
}

std::vector<uint8_t> make_rgb_png(int width, int height, const std::vector<uint8_t>& rgb, bool interlaced) {
  // Adam7's seven passes (first column, first row, column step, row step); one pass of every
  // pixel when not interlaced. Each pass is its own small image: rows of its pixels, each row
  // after a filter byte of 0, and no rows at all when the pass is empty.
  struct Pass {
    int x0, y0, dx, dy;
  };
  std::vector<Pass> passes = {{0, 0, 1, 1}};
  if (interlaced) {
    passes = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  }
  std::vector<uint8_t> scanlines;
  for (const Pass& pass : passes) {
    if (pass.x0 >= width || pass.y0 >= height) continue;
    for (int y = pass.y0; y < height; y += pass.dy) {
      scanlines.push_back(0);
      for (int x = pass.x0; x < width; x += pass.dx) {
        for (int c = 0; c < 3; ++c) scanlines.push_back(rgb[(static_cast<size_t>(y) * width + x) * 3 + c]);
      }
    }
  }
  return make_png(static_cast<uint32_t>(width), static_cast<uint32_t>(height), 2, 8, scanlines, -1, interlaced);
}

std::vector<uint8_t> make_gif(int width, int height, int frames) {
  std::vector<uint8_t> out = {'G', 'I', 'F', '8', '9', 'a'};
  put_le16(out, width);
  put_le16(out, height);
  out.insert(out.end(), {0x80, 0, 0});  // a global palette of 2 entries, background 0, no aspect
  out.insert(out.end(), {255, 0, 0, 0, 255, 0});
  for (int frame = 0; frame < frames; ++frame) {
    out.push_back(0x2c);  // image descriptor
    put_le16(out, 0);
    put_le16(out, 0);
    put_le16(out, width);
    put_le16(out, height);
    out.push_back(0);  // no local palette, not interlaced
    out.push_back(2);  // LZW minimum code size
    std::vector<uint8_t> data = lzw_run(width * height, frame == 0 ? 0 : 1);
    for (size_t at = 0; at < data.size(); at += 255) {
      size_t length = std::min<size_t>(255, data.size() - at);
      out.push_back(static_cast<uint8_t>(length));
      out.insert(out.end(), data.begin() + static_cast<long>(at), data.begin() + static_cast<long>(at + length));
    }
    out.push_back(0);  // end of the frame's data
  }
  out.push_back(0x3b);  // trailer
  return out;
}

}  // namespace lumen::image::testing
