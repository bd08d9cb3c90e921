// WebP through libwebp (Debian's libwebp-dev): still images with WebPDecode*Into into a buffer
// sized from the checked header; animations through libwebpdemux's animation decoder, which
// composes the first frame on the canvas (as Pillow shows it); later frames are never decoded.
#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>
#include <vector>

#include "image/alpha_composite.h"
#include "image/format_decoders.h"
#include "util/error.h"

namespace lumen::image {

namespace {

struct AnimDecoderDeleter {
  void operator()(WebPAnimDecoder* decoder) const { WebPAnimDecoderDelete(decoder); }
};

RgbImage first_animation_frame(std::span<const uint8_t> bytes, const WebPBitstreamFeatures& features) {
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) fail("the WebP decoder library does not match its headers");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  WebPData data{bytes.data(), bytes.size()};
  std::unique_ptr<WebPAnimDecoder, AnimDecoderDeleter> decoder(WebPAnimDecoderNew(&data, &options));
  if (!decoder) fail("the animated WebP image cannot be read (a malformed container)");
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(decoder.get(), &info)) fail("the animated WebP image cannot be read");
  // The canvas was checked through the features; a demuxer that disagrees is a malformed file.
  if (static_cast<int>(info.canvas_width) != features.width ||
      static_cast<int>(info.canvas_height) != features.height) {
    fail("the animated WebP image's canvas size is inconsistent");
  }
  uint8_t* canvas = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderHasMoreFrames(decoder.get()) || !WebPAnimDecoderGetNext(decoder.get(), &canvas, &timestamp)) {
    fail("the animated WebP image's first frame cannot be decoded");
  }
  size_t pixels = static_cast<size_t>(features.width) * static_cast<size_t>(features.height);
  std::span<const uint8_t> rgba(canvas, pixels * 4);
  if (features.has_alpha) return composite_on_white(features.width, features.height, rgba);
  RgbImage out{features.width, features.height, std::vector<uint8_t>(pixels * 3)};
  for (size_t i = 0; i < pixels; ++i) {
    for (size_t c = 0; c < 3; ++c) out.rgb[i * 3 + c] = rgba[i * 4 + c];
  }
  return out;
}

}  // namespace

RgbImage decode_webp(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  WebPBitstreamFeatures features;
  VP8StatusCode status = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (status == VP8_STATUS_NOT_ENOUGH_DATA) fail("the WebP image is truncated");
  if (status != VP8_STATUS_OK) fail("the WebP image cannot be read (status {})", static_cast<int>(status));
  check_dimensions("WebP", features.width, features.height, limits);
  if (features.has_animation) return first_animation_frame(bytes, features);

  size_t pixels = static_cast<size_t>(features.width) * static_cast<size_t>(features.height);
  int channels = features.has_alpha ? 4 : 3;
  std::vector<uint8_t> decoded(pixels * channels);
  int stride = features.width * channels;
  uint8_t* done = features.has_alpha
                      ? WebPDecodeRGBAInto(bytes.data(), bytes.size(), decoded.data(), decoded.size(), stride)
                      : WebPDecodeRGBInto(bytes.data(), bytes.size(), decoded.data(), decoded.size(), stride);
  if (!done) fail("the WebP image cannot be decoded (corrupt or truncated data)");
  if (features.has_alpha) return composite_on_white(features.width, features.height, decoded);
  return RgbImage{features.width, features.height, std::move(decoded)};
}

}  // namespace lumen::image
