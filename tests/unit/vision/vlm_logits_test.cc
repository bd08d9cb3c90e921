// A vision-language model end to end against Hugging Face transformers
// (tests/golden/vision/llava_logits.json, scripts/make_vlm_logits_golden.py): the tiny LLaVA's
// language model loaded with its projector (ModelOptions::mmproj), real PNG files through the
// model's image encoder (decode, CLIP preprocessing, vision tower, projector) and the engine's
// feature cache, their features at the image tokens of the prompt, and every position's top
// log-probabilities compared with LlavaForConditionalGeneration's, one image and two.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../../model/default_model_path.h"
#include "lumen/engine.h"
#include "lumen/error.h"
#include "vision_test_files.h"
#include "vlm_logits_compare.h"

namespace lumen::testing {
namespace {

std::string text_model_path() { return std::string(LUMEN_GENERATED_DIR) + "/vlm-llava.text.gguf"; }

class VlmLogits : public ::testing::Test {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TINY_MMPROJ("llava");
    if (!std::filesystem::exists(text_model_path())) {
      GTEST_SKIP() << text_model_path() << " is missing: run scripts/vlm_tiny_llava_text.py " LUMEN_GENERATED_DIR
                   << " (it needs the default model's vocabulary; ctest runs it as the fixture vlm_llava_text_file)";
    }
    golden_ = vision_golden("llava_logits");
  }

  static Model load() {
    ModelOptions options;
    options.mmproj = tiny_mmproj_path("llava");
    options.threads = 2;
    return Model::load(text_model_path(), options);
  }

  // Each prompt position's distribution (HF's row i predicts token i + 1; the last row, the
  // first generated token) as Lumen computes it for `ids` with `images` (repo paths) encoded.
  static std::vector<std::vector<TokenAlternative>> lumen_rows(Engine& engine, std::vector<int32_t> ids,
                                                               const std::vector<std::string>& images,
                                                               int32_t image_token) {
    std::vector<PromptImage> placed;
    size_t next = 0;
    for (size_t i = 0; i < ids.size();) {
      if (ids[i] != image_token) {
        ++i;
        continue;
      }
      // The golden's ids hold the processor's expansion already: one run of image tokens (a
      // LLaVA image is one piece with no text of its own).
      const Engine::ImageFeatures f =
          engine.encode_image(file_bytes(std::string(LUMEN_SOURCE_DIR) + "/" + images.at(next++)));
      EXPECT_EQ(f.encoded->layout.size(), 1u);
      const int64_t n = f.encoded->layout.front().n_tokens;
      placed.push_back({f.content_hash, static_cast<int64_t>(i), n,
                        std::shared_ptr<const std::vector<float>>(f.encoded, &f.encoded->features), 0});
      i += static_cast<size_t>(n);
    }
    EXPECT_EQ(next, images.size());
    return prompt_rows(engine, ids, placed);
  }

  nlohmann::json golden_;
};

TEST_F(VlmLogits, OneAndTwoImagesMatchTransformers) {
  Engine engine(load());
  const double tol = moe_tolerance();
  const auto image_token = golden_["image_token_id"].get<int32_t>();
  for (const auto& c : golden_["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const auto rows = lumen_rows(engine, c["ids"].get<std::vector<int32_t>>(),
                                 c["images"].get<std::vector<std::string>>(), image_token);
    const Comparison got = compare(c, rows, tol);
    std::printf("%s: largest log-probability difference %.6f (tolerance %.6f)\n", c["name"].get<std::string>().c_str(),
                got.worst, tol);
    EXPECT_LE(got.worst, tol);
    EXPECT_GE(got.fewest_shared, 6u);  // the same top 8, but for near-ties at its end
    EXPECT_EQ(got.top1_misses, 0);
  }
}

// The comparison sees the images: the two-image prompt with its images swapped is far from the
// golden, and the engine's feature cache served the second use of each file.
TEST_F(VlmLogits, SwappedImagesDoNotMatch) {
  Engine engine(load());
  const double tol = moe_tolerance();
  const auto& c = golden_["cases"][1];
  auto images = c["images"].get<std::vector<std::string>>();
  ASSERT_EQ(images.size(), 2u);
  std::swap(images[0], images[1]);
  const auto image_token = golden_["image_token_id"].get<int32_t>();
  const auto rows = lumen_rows(engine, c["ids"].get<std::vector<int32_t>>(), images, image_token);
  const Comparison got = compare(c, rows, tol);
  std::printf("swapped: largest difference %.4f, fewest shared %zu, top-1 misses %d\n", got.worst, got.fewest_shared,
              got.top1_misses);
  EXPECT_GT(got.worst, 10 * tol);
  EXPECT_LT(got.fewest_shared, 6u);
  EXPECT_GT(got.top1_misses, 0);
  lumen_rows(engine, c["ids"].get<std::vector<int32_t>>(), images, image_token);
  EXPECT_EQ(engine.stats().image_feature_cache_misses, 2u);
  EXPECT_EQ(engine.stats().image_feature_cache_hits, 2u);
}

TEST_F(VlmLogits, TheEncoderSaysHowImagesStandInAPrompt) {
  Model model = load();
  ASSERT_TRUE(model.image_encoder());
  EXPECT_EQ(model.image_encoder()->embedding_length(), 96);
  EXPECT_EQ(model.image_encoder()->image_marker(), "<image>");
  EXPECT_EQ(model.info().vision_tower, "cpu");  // a CPU model's tower: the CPU's host steps
  EXPECT_EQ(model.tokenize("<image>", {.add_special = false, .parse_special = true}),
            std::vector<int32_t>{golden_["image_token_id"].get<int32_t>()});
  // A file that is no image is refused by the encoder, with what was wrong.
  const std::vector<uint8_t> junk = {'G', 'I', 'F', '8', '9', 'a', 0, 0};
  EXPECT_THROW(model.image_encoder()->encode(junk), Error);
}

// A projector that belongs to another model (another embedding width) is refused at load with
// what is wrong.
TEST(VlmLoad, RefusesProjectorsItCannotUse) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const std::string text = default_model_path();
  if (!std::filesystem::exists(text)) GTEST_SKIP() << text << " is missing (scripts/fetch_models.py)";
  auto message = [&](const std::string& mmproj) {
    ModelOptions options;
    options.mmproj = mmproj;
    options.threads = 1;
    try {
      Model::load(text, options);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_NE(message(tiny_mmproj_path("llava")).find("96 wide, but"), std::string::npos)
      << message(tiny_mmproj_path("llava"));
  EXPECT_NE(message("/nonexistent.mmproj.gguf"), "loaded");
}

}  // namespace
}  // namespace lumen::testing
