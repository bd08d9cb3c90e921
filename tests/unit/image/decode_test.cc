// Decoding what the golden images do not cover: sniffing, bit depths, and the error type.
#include <gtest/gtest.h>

#include <cstring>

#include "image/decode.h"
#include "image/image_format.h"
#include "lumen/error.h"
#include "unit/image/test_images.h"

namespace lumen::image {
namespace {

std::span<const uint8_t> as_bytes(const char* text) {
  return {reinterpret_cast<const uint8_t*>(text), std::strlen(text)};
}

TEST(ImageFormat, SniffsMagicBytesNotNames) {
  EXPECT_EQ(sniff_format(testing::read_file(testing::golden_dir() / "rgb_37x23.png")), Format::kPng);
  EXPECT_EQ(sniff_format(testing::read_file(testing::golden_dir() / "photo_45x31.jpg")), Format::kJpeg);
  EXPECT_EQ(sniff_format(testing::read_file(testing::golden_dir() / "lossy_35x27.webp")), Format::kWebp);
  EXPECT_EQ(sniff_format(testing::read_file(testing::golden_dir() / "two_frames_23x29.gif")), Format::kGif);
  EXPECT_EQ(sniff_format(as_bytes("RIFF\x10\0\0\0WAVEfmt ")), Format::kUnknown);  // RIFF, but audio
  EXPECT_EQ(sniff_format(as_bytes("GIF8")), Format::kUnknown);
  EXPECT_EQ(sniff_format({}), Format::kUnknown);
}

TEST(ImageDecode, RefusesUnknownAndEmptyInput) {
  EXPECT_THROW(decode({}), Error);
  try {
    decode(as_bytes("BM this is a bitmap"));
    FAIL() << "a BMP was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("PNG, JPEG, WebP and GIF"), std::string::npos) << error.what();
  }
}

TEST(ImageDecode, SixteenBitPngKeepsTheHighByteAsPillowDoes) {
  // One row of two RGB pixels, 16 bits a sample, filter byte 0.
  std::vector<uint8_t> row = {0, 0x12, 0xff, 0x34, 0x80, 0xab, 0x01, 0xff, 0xff, 0x00, 0x00, 0x7f, 0xfe};
  RgbImage image = decode(testing::make_png(2, 1, /*RGB*/ 2, 16, row));
  ASSERT_EQ(image.width, 2);
  EXPECT_EQ(image.rgb, (std::vector<uint8_t>{0x12, 0x34, 0xab, 0xff, 0x00, 0x7f}));
}

TEST(ImageDecode, SixteenBitGrayPngIsClampedAsPillowDoes) {
  // Pillow opens 16-bit gray as "I;16" and converts to RGB by clamping to 255: 0, 255, 256, 1000
  // and 65535 become 0, 255, 255, 255, 255 (verified against Pillow 13 and transformers'
  // convert_to_rgb). With tRNS (value 100 transparent), 100 becomes white; 99 stays 99.
  std::vector<uint8_t> row = {0, 0, 0, 0, 255, 1, 0, 3, 232, 255, 255};
  RgbImage image = decode(testing::make_png(5, 1, /*gray*/ 0, 16, row));
  std::vector<uint8_t> first_channel;
  for (size_t i = 0; i < image.rgb.size(); i += 3) first_channel.push_back(image.rgb[i]);
  EXPECT_EQ(first_channel, (std::vector<uint8_t>{0, 255, 255, 255, 255}));
  std::vector<uint8_t> with_alpha = {0, 0, 99, 0, 100};
  auto png = testing::make_png(2, 1, 0, 16, with_alpha, /*gray16_transparent=*/100);
  EXPECT_EQ(decode(png).rgb, (std::vector<uint8_t>{99, 99, 99, 255, 255, 255}));
}

TEST(ImageDecode, GrayscalePngIsReplicatedToRgb) {
  std::vector<uint8_t> rows = {0, 10, 200, 0, 0, 255};  // 2 x 2, 8-bit gray
  RgbImage image = decode(testing::make_png(2, 2, /*gray*/ 0, 8, rows));
  EXPECT_EQ(image.rgb, (std::vector<uint8_t>{10, 10, 10, 200, 200, 200, 0, 0, 0, 255, 255, 255}));
}

TEST(ImageDecode, InterlacedPngEqualsTheSameImageNotInterlaced) {
  const int width = 11, height = 9;  // not multiples of 8: every Adam7 pass is partial
  std::vector<uint8_t> rgb(width * height * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 37 + 11);
  RgbImage interlaced = decode(testing::make_rgb_png(width, height, rgb, true));
  EXPECT_EQ(interlaced.rgb, rgb);
  EXPECT_EQ(decode(testing::make_rgb_png(width, height, rgb, false)).rgb, rgb);
}

TEST(ImageDecode, OneBitPngIsExpanded) {
  std::vector<uint8_t> rows = {0, 0b10100000};  // 3 x 1, 1-bit gray: white, black, white
  RgbImage image = decode(testing::make_png(3, 1, 0, 1, rows));
  EXPECT_EQ(image.rgb, (std::vector<uint8_t>{255, 255, 255, 0, 0, 0, 255, 255, 255}));
}

TEST(ImageDecode, GifFirstFrameOnly) {
  RgbImage image = decode(testing::make_gif(3, 2, 2));
  ASSERT_EQ(image.width, 3);
  ASSERT_EQ(image.height, 2);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(image.rgb[i * 3], 255);  // red: frame one; frame two is green
    EXPECT_EQ(image.rgb[i * 3 + 1], 0);
  }
}

}  // namespace
}  // namespace lumen::image
