// vision::MmprojImageEncoder from a file's bytes to features, against transformers' processor
// and model on the same file (tests/golden/vision/gemma3_image.json,
// scripts/make_vlm_image_golden.py): Gemma 3's path (bilinear squash, its mean and std), which
// the LLaVA logits test (vlm_logits_test.cc) does not take; and what the encoder tells a prompt.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lumen/error.h"
#include "vision/mmproj_image_encoder.h"
#include "vision_test_files.h"

namespace lumen::testing {
namespace {

std::vector<uint8_t> repo_file(const std::string& path) {
  std::ifstream in(std::string(LUMEN_SOURCE_DIR) + "/" + path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(MmprojImageEncoder, Gemma3FeaturesOfAPngMatchTransformers) {
  LUMEN_REQUIRE_TINY_MMPROJ("gemma3");
  const nlohmann::json golden = vision_golden("gemma3_image");
  auto encoder = vision::MmprojImageEncoder::load(tiny_mmproj_path("gemma3"), 1);
  const std::vector<float> got = encoder->encode(repo_file(golden["image"].get<std::string>())).features;
  const auto want = golden["features"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(got.size(), want.size() * want[0].size());
  double worst = 0.0, largest = 0.0;
  for (size_t r = 0; r < want.size(); ++r) {
    for (size_t c = 0; c < want[r].size(); ++c) {
      worst = std::max(worst, std::abs(static_cast<double>(got[r * want[r].size() + c]) - want[r][c]));
      largest = std::max(largest, std::abs(want[r][c]));
    }
  }
  std::printf("gemma3 features of %s: largest difference %.3g of %.3g\n", golden["image"].get<std::string>().c_str(),
              worst, largest);
  // The encoder alone agrees to 1e-4 of the largest value on fixed pixels (vision_golden_test);
  // the pixels add Pillow's 8-bit rounding, reproduced to the bit (src/image/resample.h).
  EXPECT_LT(worst, 1e-4 * largest);
}

TEST(MmprojImageEncoder, Gemma3LayoutIsTheProcessors) {
  LUMEN_REQUIRE_TINY_MMPROJ("gemma3");
  auto encoder = vision::MmprojImageEncoder::load(tiny_mmproj_path("gemma3"), 1);
  EXPECT_EQ(encoder->image_marker(), "<start_of_image>");
  const EncodedImage e = encoder->encode(repo_file("tests/golden/image/rgb_37x23.png"));
  ASSERT_EQ(e.layout.size(), 2u);
  EXPECT_EQ(e.layout[0].text, "\n\n<start_of_image>");
  EXPECT_EQ(e.layout[0].n_tokens, encoder->model().image_tokens());
  EXPECT_EQ(e.layout[1].text, "<end_of_image>\n\n");
  EXPECT_EQ(e.layout[1].n_tokens, 0);
  EXPECT_EQ(e.features.size(), static_cast<size_t>(encoder->model().image_tokens() * encoder->embedding_length()));
  EXPECT_EQ(encoder->embedding_length(), 96);
}

TEST(MmprojImageEncoder, RefusesHostileFiles) {
  LUMEN_REQUIRE_TINY_MMPROJ("gemma3");
  auto encoder = vision::MmprojImageEncoder::load(tiny_mmproj_path("gemma3"), 1);
  std::vector<uint8_t> png = repo_file("tests/golden/image/rgb_37x23.png");
  png.resize(png.size() / 2);  // truncated
  EXPECT_THROW(encoder->encode(png), Error);
  EXPECT_THROW(encoder->encode(std::vector<uint8_t>{}), Error);
}

// Idefics3 cuts an image into tiles of the encoder's size after resizing its longest side to
// clip.vision.preproc_image_size (64 for the tiny file, tiles of 32): a 37 x 23 image is 2 x 2
// tiles, a 13 x 5 one 1 x 2; each tile, then the global tile, has its run of positions with
// Idefics3Processor's text before it (the logits test holds the token ids to transformers').
TEST(MmprojImageEncoder, Idefics3TilesStandAtTheirMarkers) {
  LUMEN_REQUIRE_TINY_MMPROJ("idefics3");
  auto encoder = vision::MmprojImageEncoder::load(tiny_mmproj_path("idefics3"), 1);
  EXPECT_EQ(encoder->image_marker(), "<image>");
  const int64_t n = encoder->model().image_tokens();
  ASSERT_EQ(n, 4);
  const EncodedImage wide = encoder->encode(repo_file("tests/golden/image/tiny_13x5.jpg"));
  ASSERT_EQ(wide.layout.size(), 4u);
  EXPECT_EQ(wide.layout[0].text, "<fake_token_around_image><row_1_col_1>");
  EXPECT_EQ(wide.layout[1].text, "<fake_token_around_image><row_1_col_2>");
  EXPECT_EQ(wide.layout[2].text, "\n\n<fake_token_around_image><global-img>");
  EXPECT_EQ(wide.layout[3].text, "<fake_token_around_image>");
  EXPECT_EQ(wide.layout[3].n_tokens, 0);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(wide.layout[i].n_tokens, n);
  EXPECT_EQ(wide.features.size(), static_cast<size_t>(3 * n * encoder->embedding_length()));

  const EncodedImage square = encoder->encode(repo_file("tests/golden/image/rgb_37x23.png"));
  ASSERT_EQ(square.layout.size(), 6u);
  EXPECT_EQ(square.layout[1].text, "<fake_token_around_image><row_1_col_2>");
  EXPECT_EQ(square.layout[2].text, "\n<fake_token_around_image><row_2_col_1>");
  EXPECT_EQ(square.layout[4].text, "\n\n<fake_token_around_image><global-img>");
  EXPECT_EQ(square.features.size(), static_cast<size_t>(5 * n * encoder->embedding_length()));
  // Each tile is encoded on its own pixels: no two tiles' features are the same.
  const auto tile = [&](size_t t) {
    const auto width = static_cast<size_t>(n * encoder->embedding_length());
    return std::vector<float>(square.features.begin() + static_cast<std::ptrdiff_t>(t * width),
                              square.features.begin() + static_cast<std::ptrdiff_t>((t + 1) * width));
  };
  for (size_t a = 0; a < 5; ++a) {
    for (size_t b = a + 1; b < 5; ++b) EXPECT_NE(tile(a), tile(b)) << a << " " << b;
  }
}

// A file's image splitting is bounded: a longest edge past 8 tiles a side (or under one tile) is
// refused at load, so no file makes one image cost more than 8 x 8 + 1 tiles.
TEST(MmprojImageEncoder, Idefics3RefusesAnUnboundedLongestEdge) {
  LUMEN_REQUIRE_TINY_MMPROJ("idefics3");
  for (uint32_t edge : {16u, 32u * 8u + 1u}) {
    const std::string path = tiny_mmproj_path("idefics3") + ".edge" + std::to_string(edge) + ".gguf";
    rewrite_gguf(tiny_mmproj_path("idefics3"), path,
                 {[&](gguf::Metadata& m) {
                    m.set("clip.vision.preproc_image_size", gguf::Value::of_unsigned(gguf::ValueType::U32, edge));
                  },
                  nullptr});
    try {
      vision::MmprojImageEncoder::load(path, 1);
      ADD_FAILURE() << "longest edge " << edge << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("preproc_image_size"), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace lumen::testing
