// JPEG through libjpeg-turbo (Debian's libjpeg62-turbo-dev), with the settings Pillow decodes
// with (libjpeg's defaults: the accurate integer IDCT, fancy upsampling), so the pixels match
// the reference. libjpeg reports errors by longjmp: as in the PNG decoder, its calls live in
// functions that own no C++ objects.
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#include <vector>

#include "image/format_decoders.h"
#include "util/error.h"

namespace lumen::image {

namespace {

// libjpeg's working memory beyond the output rows (a progressive file's coefficients are 2 bytes
// a sample): past this it fails instead of allocating.
constexpr int64_t kWorkingBytesPerPixel = 8;

struct JpegErrors {
  jpeg_error_mgr base;  // first: libjpeg casts the pointer back and forth
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int max_scans;
};

void fail_with_message(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

// Warnings about corrupt data are what real cameras write, and Pillow decodes past them; a file
// that ends early is refused, as Pillow refuses it ("image file is truncated").
void on_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) fail_with_message(cinfo);
}

void check_scan_count(j_common_ptr cinfo) {
  auto* decompress = reinterpret_cast<j_decompress_ptr>(cinfo);
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (decompress->progressive_mode && decompress->input_scan_number > errors->max_scans) {
    std::snprintf(errors->message, sizeof errors->message, "it has more than %d progressive scans", errors->max_scans);
    std::longjmp(errors->jump, 1);
  }
}

struct JpegHeader {
  int width = 0, height = 0;
  J_COLOR_SPACE color = JCS_UNKNOWN;
  bool adobe = false;
};

bool read_header(j_decompress_ptr cinfo, std::span<const uint8_t> bytes, JpegHeader* header) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (setjmp(errors->jump)) return false;
  jpeg_mem_src(cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(cinfo, TRUE);
  header->width = static_cast<int>(cinfo->image_width);
  header->height = static_cast<int>(cinfo->image_height);
  header->color = cinfo->jpeg_color_space;
  header->adobe = cinfo->saw_Adobe_marker;
  return true;
}

// Decodes into `out` (height rows of width * out_color_components bytes).
bool read_pixels(j_decompress_ptr cinfo, J_COLOR_SPACE out_color, long max_memory, uint8_t* out) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  if (setjmp(errors->jump)) return false;
  cinfo->out_color_space = out_color;
  cinfo->mem->max_memory_to_use = max_memory;
  jpeg_start_decompress(cinfo);
  size_t row_bytes = size_t{cinfo->output_width} * cinfo->output_components;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + cinfo->output_scanline * row_bytes;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

struct JpegReader {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors{};
  jpeg_progress_mgr progress{};
  ~JpegReader() { jpeg_destroy_decompress(&cinfo); }
};

// Pillow's CMYK to RGB: the ink of each channel darkened by black, in integers
// (R = (255-K) - C*(255-K)/255 with its rounding division by 255).
uint8_t cmyk_channel(int ink, int not_black) {
  int product = ink * not_black + 128;
  return static_cast<uint8_t>(not_black - (((product >> 8) + product) >> 8));
}

}  // namespace

RgbImage decode_jpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  JpegReader reader;
  reader.cinfo.err = jpeg_std_error(&reader.errors.base);
  reader.errors.base.error_exit = fail_with_message;
  reader.errors.base.emit_message = on_message;
  reader.errors.max_scans = limits.max_jpeg_scans;
  jpeg_create_decompress(&reader.cinfo);
  reader.progress.progress_monitor = check_scan_count;
  reader.cinfo.progress = &reader.progress;

  JpegHeader header;
  if (!read_header(&reader.cinfo, bytes, &header)) fail("the JPEG image cannot be read: {}", reader.errors.message);
  check_dimensions("JPEG", header.width, header.height, limits);

  J_COLOR_SPACE out_color = JCS_RGB;
  int components = 3;
  if (header.color == JCS_GRAYSCALE) {
    out_color = JCS_GRAYSCALE, components = 1;
  } else if (header.color == JCS_CMYK || header.color == JCS_YCCK) {
    out_color = JCS_CMYK, components = 4;
  } else if (header.color != JCS_YCbCr && header.color != JCS_RGB) {
    fail("the JPEG image's colour space ({}) is not supported", static_cast<int>(header.color));
  }
  size_t pixels = static_cast<size_t>(header.width) * static_cast<size_t>(header.height);
  std::vector<uint8_t> decoded(pixels * components);
  long max_memory = static_cast<long>(kWorkingBytesPerPixel * static_cast<int64_t>(pixels) + (64 << 20));
  if (!read_pixels(&reader.cinfo, out_color, max_memory, decoded.data())) {
    fail("the JPEG image cannot be read: {}", reader.errors.message);
  }

  RgbImage out{header.width, header.height, {}};
  if (components == 3) {
    out.rgb = std::move(decoded);
    return out;
  }
  out.rgb.resize(pixels * 3);
  for (size_t i = 0; i < pixels; ++i) {
    if (components == 1) {
      out.rgb[i * 3] = out.rgb[i * 3 + 1] = out.rgb[i * 3 + 2] = decoded[i];
      continue;
    }
    // Adobe's CMYK JPEGs (every one Photoshop writes, and Pillow's own) store inverted ink.
    const uint8_t* cmyk = &decoded[i * 4];
    auto ink = [&](int c) { return header.adobe ? 255 - cmyk[c] : cmyk[c]; };
    int not_black = 255 - ink(3);
    for (int c = 0; c < 3; ++c) out.rgb[i * 3 + c] = cmyk_channel(ink(c), not_black);
  }
  return out;
}

}  // namespace lumen::image
