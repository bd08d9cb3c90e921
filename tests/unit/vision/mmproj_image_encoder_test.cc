// vision::MmprojImageEncoder from a file's bytes to features, against transformers' processor
// and model on the same file (tests/golden/vision/gemma3_image.json,
// scripts/make_vlm_image_golden.py): Gemma 3's path (bilinear squash, its mean and std), which
// the LLaVA logits test (vlm_logits_test.cc) does not take; and what the encoder tells a prompt.
#include <gtest/gtest.h>

#include <cmath>
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

TEST(MmprojImageEncoder, RefusesHostileFilesAndTiledFamilies) {
  LUMEN_REQUIRE_TINY_MMPROJ("idefics3");
  auto encoder = vision::MmprojImageEncoder::load(tiny_mmproj_path("gemma3"), 1);
  std::vector<uint8_t> png = repo_file("tests/golden/image/rgb_37x23.png");
  png.resize(png.size() / 2);  // truncated
  EXPECT_THROW(encoder->encode(png), Error);
  EXPECT_THROW(encoder->encode(std::vector<uint8_t>{}), Error);
  try {
    vision::MmprojImageEncoder::load(tiny_mmproj_path("idefics3"), 1);
    ADD_FAILURE() << "an Idefics3 projector loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiles"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::testing
