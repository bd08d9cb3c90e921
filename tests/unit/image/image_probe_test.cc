// probe(): the size decode() will return, from the header alone, with the same refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "image/decode.h"
#include "image/image_probe.h"
#include "lumen/error.h"
#include "unit/image/test_images.h"

namespace lumen::image {
namespace {

TEST(ImageProbe, AgreesWithDecodeOnEveryGoldenImage) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::golden_dir())) {
    if (entry.path().extension() == ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    auto bytes = testing::read_file(entry.path());
    ImageInfo info = probe(bytes);
    RgbImage image = decode(bytes);
    EXPECT_EQ(info.width, image.width);
    EXPECT_EQ(info.height, image.height);
    EXPECT_NE(info.format, Format::kUnknown);
    ++checked;
  }
  EXPECT_GE(checked, 19);
}

TEST(ImageProbe, ReadsJpegMarkersAsLibjpegDoes) {
  // Two quirks the fuzz target found probe() reading otherwise than libjpeg: an APP0 length below
  // 2 skips nothing, and FF 00 between markers is stuffed data. decode() accepts both files.
  auto jpeg = testing::read_file(testing::golden_dir() / "photo_45x31.jpg");
  std::vector<uint8_t> short_app0 = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x01};
  short_app0.insert(short_app0.end(), jpeg.begin() + 2, jpeg.end());
  // After the JFIF segment (its length at bytes 4-5 counts from byte 4): a stray byte and FF 00.
  ASSERT_EQ(jpeg[3], 0xe0);
  auto after_app0 = jpeg.begin() + 4 + (jpeg[4] << 8 | jpeg[5]);
  std::vector<uint8_t> stuffed(jpeg.begin(), after_app0);
  stuffed.insert(stuffed.end(), {0x12, 0xff, 0x00});
  stuffed.insert(stuffed.end(), after_app0, jpeg.end());
  for (const auto& bytes : {short_app0, stuffed}) {
    RgbImage image = decode(bytes);
    ImageInfo info = probe(bytes);
    EXPECT_EQ(info.width, image.width);
    EXPECT_EQ(info.height, image.height);
    EXPECT_EQ(info.width, 45);
  }
}

TEST(ImageProbe, GifCanvasGrowsToHoldTheFirstFrame) {
  auto gif = testing::make_gif(4, 4, 1);
  size_t descriptor = 6 + 7 + 6;
  gif[descriptor + 1] = 3;  // the frame's left edge at 3: the canvas becomes 7 wide
  EXPECT_EQ(probe(gif).width, 7);
  EXPECT_EQ(decode(gif).width, 7);
}

TEST(ImageProbe, RefusesWhatDecodeRefusesFromTheHeader) {
  auto refusal = [](std::span<const uint8_t> bytes) -> std::string {
    try {
      probe(bytes);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  };
  EXPECT_NE(refusal(testing::make_png(65535, 65535, 6, 8, {0})).find("65535 x 65535"), std::string::npos);
  EXPECT_NE(refusal(testing::make_gif(2, 2, 0)).find("no frame"), std::string::npos);
  auto jpeg = testing::read_file(testing::golden_dir() / "photo_45x31.jpg");
  EXPECT_NE(refusal(std::span<const uint8_t>(jpeg.data(), 20)).find("truncated"), std::string::npos);
  DecodeLimits tiny;
  tiny.max_pixels = 100;
  EXPECT_EQ(refusal(jpeg), "");
  EXPECT_THROW(probe(jpeg, tiny), Error);
}

}  // namespace
}  // namespace lumen::image
