// GIF through giflib (Debian's libgif-dev): the first frame only. The records before it
// (extensions, comments) are skipped as they come; nothing after it is read, so a file with
// 10 000 frames costs what its first frame costs. The frame is placed on its canvas as Pillow
// places it, so the pixels match the reference.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "image/alpha_composite.h"
#include "image/format_decoders.h"
#include "util/error.h"

namespace lumen::image {

namespace {

struct GifInput {
  const uint8_t* data;
  size_t size;
  size_t offset;
};

int read_bytes(GifFileType* gif, GifByteType* out, int length) {
  auto* input = static_cast<GifInput*>(gif->UserData);
  size_t count = std::min(static_cast<size_t>(std::max(length, 0)), input->size - input->offset);
  std::memcpy(out, input->data + input->offset, count);
  input->offset += count;
  return static_cast<int>(count);
}

struct GifCloser {
  GifFileType* gif = nullptr;
  ~GifCloser() {
    int error = 0;
    if (gif) DGifCloseFile(gif, &error);
  }
};

[[noreturn]] void fail_gif(const GifFileType* gif) {
  const char* reason = GifErrorString(gif->Error);
  fail("the GIF image cannot be read: {}", reason ? reason : "unknown error");
}

// The transparent palette index of the frame a graphics control extension precedes, or -1.
int skip_to_first_image(GifFileType* gif) {
  int transparent = -1;
  for (;;) {
    GifRecordType record;
    if (DGifGetRecordType(gif, &record) == GIF_ERROR) fail_gif(gif);
    if (record == IMAGE_DESC_RECORD_TYPE) return transparent;
    if (record == TERMINATE_RECORD_TYPE) fail("the GIF image has no frame");
    if (record != EXTENSION_RECORD_TYPE) fail("the GIF image has an unknown record type");
    int code = 0;
    GifByteType* block = nullptr;
    if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) fail_gif(gif);
    if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] >= 4) {
      GraphicsControlBlock control;
      if (DGifExtensionToGCB(block[0], block + 1, &control) == GIF_OK) transparent = control.TransparentColor;
    }
    while (block) {
      if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) fail_gif(gif);
    }
  }
}

}  // namespace

RgbImage decode_gif(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  GifInput input{bytes.data(), bytes.size(), 0};
  int error = 0;
  GifCloser file;
  file.gif = DGifOpen(&input, read_bytes, &error);
  if (!file.gif) {
    const char* reason = GifErrorString(error);
    fail("the GIF image cannot be read: {}", reason ? reason : "unknown error");
  }
  GifFileType* gif = file.gif;
  check_dimensions("GIF", gif->SWidth, gif->SHeight, limits);
  int transparent = skip_to_first_image(gif);
  if (DGifGetImageDesc(gif) == GIF_ERROR) fail_gif(gif);
  const GifImageDesc& frame = gif->Image;
  check_dimensions("GIF frame", frame.Width, frame.Height, limits);
  // Pillow grows the canvas to hold a first frame that overhangs the logical screen.
  int64_t width = std::max<int64_t>(gif->SWidth, int64_t{frame.Left} + frame.Width);
  int64_t height = std::max<int64_t>(gif->SHeight, int64_t{frame.Top} + frame.Height);
  check_dimensions("GIF", width, height, limits);

  // Outside the frame, Pillow fills the canvas with the transparent index when there is one,
  // else with index 0.
  std::vector<uint8_t> indices(static_cast<size_t>(width * height), static_cast<uint8_t>(std::max(transparent, 0)));
  std::vector<GifPixelType> line(frame.Width);
  // Interlaced rows arrive in four passes: every 8th from 0, every 8th from 4, every 4th from
  // 2, every 2nd from 1.
  constexpr int kPassStart[4] = {0, 4, 2, 1}, kPassStep[4] = {8, 8, 4, 2};
  int passes = frame.Interlace ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    int start = frame.Interlace ? kPassStart[pass] : 0, step = frame.Interlace ? kPassStep[pass] : 1;
    for (int y = start; y < frame.Height; y += step) {
      if (DGifGetLine(gif, line.data(), frame.Width) == GIF_ERROR) fail_gif(gif);
      std::copy(line.begin(), line.end(), indices.begin() + (frame.Top + y) * width + frame.Left);
    }
  }

  // The frame's own palette, else the file's; a GIF with neither is shown as gray levels.
  const ColorMapObject* palette = frame.ColorMap ? frame.ColorMap : gif->SColorMap;
  auto color = [&](uint8_t index, int channel) -> uint8_t {
    if (!palette) return index;
    if (index >= palette->ColorCount) return 0;
    const GifColorType& entry = palette->Colors[index];
    return channel == 0 ? entry.Red : channel == 1 ? entry.Green : entry.Blue;
  };
  RgbImage out{static_cast<int>(width), static_cast<int>(height), std::vector<uint8_t>(indices.size() * 3)};
  for (size_t i = 0; i < indices.size(); ++i) {
    bool clear = indices[i] == transparent;
    for (int c = 0; c < 3; ++c) out.rgb[i * 3 + c] = clear ? 255 : color(indices[i], c);
  }
  return out;
}

}  // namespace lumen::image
