// src/image against Hugging Face transformers' image processors (PIL path) on the images
// scripts/make_image_golden.py made: the decoded RGB exactly, the pixel tensors to 1e-3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "image/decode.h"
#include "image/image_tiling.h"
#include "image/preprocess.h"
#include "unit/image/test_images.h"

namespace lumen::image {
namespace {

using nlohmann::json;

json load_golden() {
  auto bytes = testing::read_file(testing::golden_dir() / "preprocess.json");
  return json::parse(bytes.begin(), bytes.end());
}

std::string to_hex(const std::vector<uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) out += kDigits[b >> 4], out += kDigits[b & 15];
  return out;
}

PreprocessParams params_of(const json& tensor) {
  PreprocessParams params;
  params.size = tensor["size"];
  params.mode = tensor["mode"] == "square" ? ResizeMode::kSquare : ResizeMode::kShortestEdgeCenterCrop;
  params.filter = resize_filter_from_pil(tensor["filter"]);
  params.rescale_factor = tensor["rescale_factor"];
  for (int c = 0; c < 3; ++c) params.mean[c] = tensor["mean"][c], params.std[c] = tensor["std"][c];
  return params;
}

TEST(ImageGolden, DecodedPixelsMatchPillowExactly) {
  json golden = load_golden();
  ASSERT_GE(golden["cases"].size(), 15u);
  for (const json& item : golden["cases"]) {
    std::string file = item["file"];
    SCOPED_TRACE(file);
    RgbImage image = decode(testing::read_file(testing::golden_dir() / file));
    EXPECT_EQ(image.width, item["width"].get<int>());
    EXPECT_EQ(image.height, item["height"].get<int>());
    std::string expected = item["rgb_hex"];
    std::string got = to_hex(image.rgb);
    if (got != expected && got.size() == expected.size()) {
      int worst = 0;
      for (size_t i = 0; i < got.size(); i += 2) {
        int a = std::stoi(got.substr(i, 2), nullptr, 16), b = std::stoi(expected.substr(i, 2), nullptr, 16);
        worst = std::max(worst, std::abs(a - b));
      }
      ADD_FAILURE() << "RGB differs from Pillow's by up to " << worst << " levels";
    } else {
      EXPECT_EQ(got, expected);
    }
  }
}

TEST(ImageGolden, PixelTensorsMatchTransformersProcessors) {
  json golden = load_golden();
  std::map<std::string, double> worst;  // per processor, reported for the docs
  for (const json& item : golden["cases"]) {
    std::string file = item["file"];
    RgbImage image = decode(testing::read_file(testing::golden_dir() / file));
    for (const json& tensor : item["tensors"]) {
      std::string name = tensor["processor"];
      SCOPED_TRACE(file + " / " + name);
      PixelTensor got = preprocess(image, params_of(tensor));
      const json& expected = tensor["chw_e4"];
      ASSERT_EQ(got.width, tensor["size"].get<int>());
      ASSERT_EQ(got.chw.size(), expected.size());
      double max_diff = 0.0;
      for (size_t i = 0; i < got.chw.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(got.chw[i] - expected[i].get<int>() * 1e-4));
      }
      EXPECT_LE(max_diff, 1e-3);
      worst[name] = std::max(worst[name], max_diff);
    }
  }
  for (const auto& [name, diff] : worst) std::printf("max |lumen - transformers| %-8s %.2e\n", name.c_str(), diff);
}

TEST(ImageGolden, Idefics3TilesMatchTransformers) {
  json golden = load_golden();
  double worst = 0.0;
  int checked = 0;
  for (const json& item : golden["cases"]) {
    if (!item.contains("idefics3_tiles")) continue;
    const json& expected = item["idefics3_tiles"];
    std::string file = item["file"];
    SCOPED_TRACE(file);
    TilingParams params;
    params.longest_edge = expected["longest_edge"];
    params.tile_size = expected["tile_size"];
    params.filter = resize_filter_from_pil(expected["filter"]);
    params.rescale_factor = expected["rescale_factor"];
    for (int c = 0; c < 3; ++c) params.mean[c] = expected["mean"][c], params.std[c] = expected["std"][c];
    TiledPixels got = split_into_tiles(decode(testing::read_file(testing::golden_dir() / file)), params);
    EXPECT_EQ(got.rows, expected["rows"].get<int>());
    EXPECT_EQ(got.cols, expected["cols"].get<int>());
    ASSERT_EQ(got.tiles.size(), expected["tiles_e4"].size());
    for (size_t t = 0; t < got.tiles.size(); ++t) {
      const json& values = expected["tiles_e4"][t];
      ASSERT_EQ(got.tiles[t].chw.size(), values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        worst = std::max(worst, std::fabs(got.tiles[t].chw[i] - values[i].get<int>() * 1e-4));
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);
  EXPECT_LE(worst, 1e-3);
  std::printf("max |lumen - transformers| idefics3 tiles %.2e\n", worst);
}

}  // namespace
}  // namespace lumen::image
