// Gemma 3's pan-and-scan crops (image::pan_and_scan_crops) against transformers'
// Gemma3ImageProcessorPil with do_pan_and_scan (tests/golden/image/pan_and_scan.json,
// scripts/make_pan_and_scan_golden.py): the crop count, and the whole image's and every crop's
// pixel tensor, each crop preprocessed like the whole image, to 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "image/decode.h"
#include "image/pan_and_scan.h"
#include "image/preprocess.h"
#include "lumen/error.h"
#include "unit/image/test_images.h"

namespace lumen::image {
namespace {

using nlohmann::json;

RgbImage solid(int width, int height) {
  return RgbImage{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, 7)};
}

TEST(PanAndScan, CropsAndPixelsMatchTransformers) {
  const auto bytes = testing::read_file(testing::golden_dir() / "pan_and_scan.json");
  const json golden = json::parse(bytes.begin(), bytes.end());
  const json& p = golden["params"];
  PanAndScanParams params{p["min_crop_size"].get<int>(), p["max_num_crops"].get<int>(),
                          p["min_ratio_to_activate"].get<double>()};
  PreprocessParams pre;
  pre.size = p["size"].get<int>();
  pre.mode = ResizeMode::kSquare;
  pre.filter = ResizeFilter::kBilinear;
  pre.mean = {0.5f, 0.5f, 0.5f};
  pre.std = {0.5f, 0.5f, 0.5f};
  size_t with_crops = 0, without = 0;
  for (const json& c : golden["cases"]) {
    const std::string file = c["file"];
    SCOPED_TRACE(file);
    const RgbImage image = decode(testing::read_file(testing::golden_dir() / file));
    std::vector<RgbImage> all = {image};
    for (RgbImage& crop : pan_and_scan_crops(image, params)) all.push_back(std::move(crop));
    ASSERT_EQ(all.size() - 1, c["num_crops"].get<size_t>());
    (all.size() > 1 ? with_crops : without) += 1;
    const json& want = c["pixels"];
    ASSERT_EQ(want.size(), all.size());
    double worst = 0.0;
    for (size_t k = 0; k < all.size(); ++k) {
      const PixelTensor got = preprocess(all[k], pre);
      ASSERT_EQ(got.chw.size(), want[k].size());
      for (size_t i = 0; i < got.chw.size(); ++i) {
        worst = std::max(worst, std::abs(static_cast<double>(got.chw[i]) - want[k][i].get<double>()));
      }
    }
    std::printf("%s: %zu crops, largest pixel difference %.2e\n", file.c_str(), all.size() - 1, worst);
    EXPECT_LE(worst, 1e-3);
  }
  EXPECT_GE(with_crops, 6u);  // wide, tall and three crops
  EXPECT_GE(without, 1u);     // too nearly square to activate
}

// The processor's rules that the files do not reach.
TEST(PanAndScan, CountsAndRefusals) {
  PanAndScanParams p{4, 3, 1.2};
  EXPECT_TRUE(pan_and_scan_crops(solid(11, 10), p).empty());  // ratio 1.1: not activated
  EXPECT_TRUE(pan_and_scan_crops(solid(10, 3), p).empty());   // crops 3 high, below the minimum 4
  const auto wide = pan_and_scan_crops(solid(100, 10), p);    // ratio 10, held to max_num_crops
  ASSERT_EQ(wide.size(), 3u);
  EXPECT_EQ(wide[0].width, 34);  // ceil(100 / 3); the last crop is cut at the border
  EXPECT_EQ(wide[2].width, 32);
  EXPECT_EQ(pan_and_scan_crops(solid(10, 30), p).size(), 3u);  // tall: stacked
  EXPECT_THROW(pan_and_scan_crops(solid(10, 30), PanAndScanParams{0, 3, 1.2}), Error);
  EXPECT_THROW(pan_and_scan_crops(solid(10, 30), PanAndScanParams{4, 1, 1.2}), Error);
  EXPECT_THROW(pan_and_scan_crops(solid(10, 30), PanAndScanParams{4, 3, 0.5}), Error);
}

}  // namespace
}  // namespace lumen::image
