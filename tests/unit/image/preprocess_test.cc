// Preprocessing properties the goldens do not pin down: shapes, crop padding, parameter checks.
#include <gtest/gtest.h>

#include "image/preprocess.h"
#include "lumen/error.h"

namespace lumen::image {
namespace {

RgbImage solid(int width, int height, uint8_t r, uint8_t g, uint8_t b) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  for (size_t i = 0; i < image.rgb.size(); i += 3) image.rgb[i] = r, image.rgb[i + 1] = g, image.rgb[i + 2] = b;
  return image;
}

TEST(Preprocess, SolidColourSurvivesEveryFilterAndMode) {
  // Weights sum to one in every filter, so a flat image stays flat: exactly (v/255 - mean)/std.
  RgbImage image = solid(37, 23, 200, 100, 0);
  for (auto filter : {ResizeFilter::kBilinear, ResizeFilter::kBicubic, ResizeFilter::kLanczos}) {
    for (auto mode : {ResizeMode::kSquare, ResizeMode::kShortestEdgeCenterCrop}) {
      PreprocessParams params;
      params.size = 16;
      params.filter = filter;
      params.mode = mode;
      PixelTensor tensor = preprocess(image, params);
      ASSERT_EQ(tensor.width, 16);
      ASSERT_EQ(tensor.height, 16);
      ASSERT_EQ(tensor.chw.size(), 3u * 16 * 16);
      const uint8_t values[3] = {200, 100, 0};
      for (int c = 0; c < 3; ++c) {
        float expected = (static_cast<float>(values[c] / 255.0) - params.mean[c]) / params.std[c];
        EXPECT_FLOAT_EQ(tensor.chw[c * 256 + 17], expected);
      }
    }
  }
}

TEST(Preprocess, ResizeToTheSameSizeIsTheIdentity) {
  RgbImage image{3, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}};
  EXPECT_EQ(resize(image, 3, 2, ResizeFilter::kLanczos).rgb, image.rgb);
}

TEST(Preprocess, CenterCropPadsSmallImagesWithBlackAsTransformersDoes) {
  RgbImage image = solid(1, 1, 9, 9, 9);
  RgbImage crop = center_crop(image, 2, 3);
  // ceil((3-1)/2) = 1 row and ceil((2-1)/2) = 1 column of padding before the pixel.
  ASSERT_EQ(crop.rgb.size(), 18u);
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 2; ++x) EXPECT_EQ(crop.rgb[(y * 2 + x) * 3], (y == 1 && x == 1) ? 9 : 0);
  }
}

TEST(Preprocess, CenterCropTakesTheMiddleFlooringOddMargins) {
  RgbImage image{4, 1, {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}};
  EXPECT_EQ(center_crop(image, 1, 1).rgb, (std::vector<uint8_t>{1, 1, 1}));  // (4-1)//2 = 1
}

TEST(Preprocess, BadParametersAreRefused) {
  RgbImage image = solid(4, 4, 1, 2, 3);
  PreprocessParams params;
  params.size = 0;
  EXPECT_THROW(preprocess(image, params), Error);
  params.size = 100000;
  EXPECT_THROW(preprocess(image, params), Error);
  params = {};
  params.std[1] = 0.0f;
  EXPECT_THROW(preprocess(image, params), Error);
  EXPECT_THROW(resize_filter_from_pil(0), Error);  // NEAREST: no model we serve uses it
  EXPECT_THROW(resize_filter_from_pil(7), Error);
  EXPECT_THROW(preprocess(RgbImage{}, PreprocessParams{}), Error);
}

TEST(Preprocess, ExtremeAspectRatioIsBounded) {
  // A 16384 x 1 strip: shortest edge to 224 would ask for a 3.6M-pixel-wide image; the long side
  // is capped, and the result still has the encoder's shape.
  RgbImage strip = solid(16384, 1, 50, 60, 70);
  PixelTensor tensor = preprocess(strip, PreprocessParams{});
  EXPECT_EQ(tensor.width, 224);
  EXPECT_EQ(tensor.chw.size(), 3u * 224 * 224);
}

}  // namespace
}  // namespace lumen::image
