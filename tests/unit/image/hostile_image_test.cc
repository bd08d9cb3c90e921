// Hostile images: each is refused with a lumen::Error naming the problem, before the cost it
// tries to cause (a huge allocation, a walk over thousands of frames or scans).
#include <gtest/gtest.h>

#include <string>

#include "image/decode.h"
#include "lumen/error.h"
#include "unit/image/test_images.h"

namespace lumen::image {
namespace {

// The message of the Error decode throws ("" when it does not throw one).
std::string refusal(std::span<const uint8_t> bytes, const DecodeLimits& limits = {}) {
  try {
    decode(bytes, limits);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(HostileImage, HugePngHeaderIsRefusedBeforeAllocating) {
  // 65535 x 65535 RGBA (16 GiB decoded) declared by a file of a few dozen bytes.
  auto png = testing::make_png(65535, 65535, 6, 8, {0});
  std::string message = refusal(png);
  EXPECT_TRUE(contains(message, "65535 x 65535")) << message;
  EXPECT_TRUE(contains(message, "at most 16384")) << message;
  // Within the side limit but over the pixel limit.
  message = refusal(testing::make_png(16000, 16000, 2, 8, {0}));
  EXPECT_TRUE(contains(message, "pixels are accepted")) << message;
  // Zero-sized.
  EXPECT_TRUE(contains(refusal(testing::make_png(0, 5, 2, 8, {0})), "empty size"));
}

TEST(HostileImage, DecompressionBombStaysWithinThePixelLimit) {
  // 4096 x 4096 gray zeros deflate to about 16 KiB; decoded they are 48 MiB of RGB. Refused
  // under a 1 Mi-pixel limit from the header alone, decoded under the default one.
  const int side = 4096;
  std::vector<uint8_t> rows(static_cast<size_t>(side + 1) * side, 0);
  auto png = testing::make_png(side, side, 0, 8, rows);
  EXPECT_LT(png.size(), 100u << 10);
  DecodeLimits small;
  small.max_pixels = 1 << 20;
  EXPECT_TRUE(contains(refusal(png, small), "at most 1048576 pixels")) << refusal(png, small);
  RgbImage image = decode(png);
  EXPECT_EQ(image.rgb.size(), size_t{side} * side * 3);
}

TEST(HostileImage, ByteLimitIsCheckedFirst) {
  auto png = testing::read_file(testing::golden_dir() / "rgb_37x23.png");
  DecodeLimits limits;
  limits.max_bytes = 100;
  EXPECT_TRUE(contains(refusal(png, limits), "at most 100 bytes")) << refusal(png, limits);
}

TEST(HostileImage, TruncatedFilesAreRefusedInEveryFormat) {
  for (const char* name : {"rgb_37x23.png", "rgba_29x41.png", "photo_45x31.jpg", "progressive_40x28.jpg",
                           "lossless_rgba_33x25.webp", "lossy_35x27.webp", "two_frames_23x29.gif"}) {
    SCOPED_TRACE(name);
    auto bytes = testing::read_file(testing::golden_dir() / name);
    RgbImage whole = decode(bytes);
    // Every prefix is either refused with an Error or (cut only in trailing chunks) the same image.
    for (size_t length = 1; length < bytes.size(); ++length) {
      std::span<const uint8_t> prefix(bytes.data(), length);
      try {
        RgbImage image = decode(prefix);
        EXPECT_GT(length, bytes.size() / 2) << "a half file decoded";
        EXPECT_EQ(image.rgb, whole.rgb) << "at " << length;
      } catch (const Error&) {
      }
    }
  }
}

TEST(HostileImage, HugeJpegHeaderIsRefused) {
  auto jpeg = testing::read_file(testing::golden_dir() / "photo_45x31.jpg");
  // The SOF0 marker's height and width fields, rewritten to 65500 x 65500.
  for (size_t at = 2; at + 9 < jpeg.size(); ++at) {
    if (jpeg[at] == 0xff && jpeg[at + 1] == 0xc0) {
      jpeg[at + 5] = jpeg[at + 7] = 0xff;
      jpeg[at + 6] = jpeg[at + 8] = 0xdc;
      break;
    }
  }
  std::string message = refusal(jpeg);
  EXPECT_TRUE(contains(message, "JPEG image is 65500 x 65500")) << message;
}

TEST(HostileImage, JpegScanCountIsBounded) {
  auto jpeg = testing::read_file(testing::golden_dir() / "progressive_40x28.jpg");
  DecodeLimits limits;
  limits.max_jpeg_scans = 3;  // the file has more (Pillow's progression writes about ten)
  std::string message = refusal(jpeg, limits);
  EXPECT_TRUE(contains(message, "more than 3 progressive scans")) << message;
  EXPECT_NO_THROW(decode(jpeg));
}

TEST(HostileImage, HugeWebpCanvasIsRefused) {
  // A VP8X (extended) header declaring a 20000 x 20000 canvas, and nothing else.
  std::vector<uint8_t> webp = {'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P',
                               'V', 'P', '8', 'X', 10, 0, 0, 0, 0,   0,   0,   0};
  uint32_t minus_one = 20000 - 1;
  for (int repeat = 0; repeat < 2; ++repeat) {
    for (int shift = 0; shift < 24; shift += 8) webp.push_back(static_cast<uint8_t>(minus_one >> shift));
  }
  std::string message = refusal(webp);
  EXPECT_TRUE(contains(message, "20000 x 20000")) << message;
}

TEST(HostileImage, GifWithTenThousandFramesReadsOnlyTheFirst) {
  auto gif = testing::make_gif(4, 4, 10000);
  EXPECT_GT(gif.size(), 100000u);
  RgbImage image = decode(gif);
  EXPECT_EQ(image.rgb[0], 255);
  // Cutting the file in its 5000th frame changes nothing: the frames after the first are never
  // read, so neither their cost nor their damage counts.
  std::span<const uint8_t> cut(gif.data(), gif.size() / 2 + 3);
  EXPECT_EQ(decode(cut).rgb, image.rgb);
}

TEST(HostileImage, GifFrameLargerThanTheLimitsIsRefused) {
  // A 2 x 2 screen whose first frame claims 60000 x 60000.
  auto gif = testing::make_gif(2, 2, 1);
  size_t descriptor = 6 + 7 + 6;  // header, screen descriptor, palette
  ASSERT_EQ(gif[descriptor], 0x2c);
  gif[descriptor + 5] = gif[descriptor + 7] = 0x60;
  gif[descriptor + 6] = gif[descriptor + 8] = 0xea;
  std::string message = refusal(gif);
  EXPECT_TRUE(contains(message, "GIF frame image is 60000 x 60000")) << message;
}

TEST(HostileImage, GifWithoutAFrameIsRefused) {
  auto gif = testing::make_gif(2, 2, 0);
  EXPECT_TRUE(contains(refusal(gif), "no frame")) << refusal(gif);
}

}  // namespace
}  // namespace lumen::image
