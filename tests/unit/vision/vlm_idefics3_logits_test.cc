// Idefics3 / SmolVLM end to end against Hugging Face transformers
// (tests/golden/vision/idefics3_logits.json, scripts/make_vlm_idefics3_logits_golden.py): the
// tiny Idefics3's language model loaded with its projector (ModelOptions::mmproj), real image
// files through the encoder (decode, the image splitting into tiles and the global tile, the
// vision tower and connector per tile) and the engine's feature cache; the prompt as the chat
// template writes it (one "<image>" per image) expanded the way lumen serve and lumen run do it
// (server::expand_image_markers with the encoder's layout), which must give the ids
// Idefics3Processor gives; then every position's top log-probabilities against
// Idefics3ForConditionalGeneration's, one image and two.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lumen/engine.h"
#include "lumen/error.h"
#include "server/chat_images.h"
#include "vision/tiled_prompt_layout.h"
#include "vision_test_files.h"
#include "vlm_logits_compare.h"

namespace lumen::testing {
namespace {

std::string text_model_path() { return std::string(LUMEN_GENERATED_DIR) + "/vlm-idefics3.text.gguf"; }

class VlmIdefics3Logits : public ::testing::Test {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TINY_MMPROJ("idefics3");
    if (!std::filesystem::exists(text_model_path())) {
      GTEST_SKIP() << text_model_path() << " is missing: run scripts/vlm_tiny_idefics3_text.py " LUMEN_GENERATED_DIR
                   << " (it needs the default model's vocabulary; ctest runs it as the fixture vlm_idefics3_text_file)";
    }
    golden_ = vision_golden("idefics3_logits");
  }

  static Model load() {
    ModelOptions options;
    options.mmproj = tiny_mmproj_path("idefics3");
    options.threads = 2;
    return Model::load(text_model_path(), options);
  }

  // The case's template prompt with `images` (repo paths) encoded and expanded as the server
  // does; the expanded ids go to `expanded`.
  static std::vector<PromptImage> place(Engine& engine, const Model& model, const nlohmann::json& c,
                                        const std::vector<std::string>& images, std::vector<int32_t>& expanded) {
    std::vector<Engine::ImageFeatures> encoded;
    for (const std::string& image : images) {
      encoded.push_back(engine.encode_image(file_bytes(std::string(LUMEN_SOURCE_DIR) + "/" + image)));
    }
    expanded = c["marker_ids"].get<std::vector<int32_t>>();
    return server::expand_image_markers(model, model.image_encoder()->image_marker(), expanded, encoded);
  }

  nlohmann::json golden_;
};

TEST_F(VlmIdefics3Logits, OneAndTwoImagesMatchTransformers) {
  Model model = load();
  Engine engine(model);
  const double tol = moe_tolerance();
  for (const auto& c : golden_["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    std::vector<int32_t> ids;
    const std::vector<PromptImage> placed = place(engine, model, c, c["images"].get<std::vector<std::string>>(), ids);
    // The tiles' markers, newlines and image tokens are the processor's, id for id.
    ASSERT_EQ(ids, c["ids"].get<std::vector<int32_t>>());
    size_t tiles = 0;
    for (const auto& grid : c["grids"]) tiles += grid[0].get<size_t>() * grid[1].get<size_t>() + 1;
    EXPECT_EQ(placed.size(), tiles);
    const Comparison got = compare(c, prompt_rows(engine, ids, placed), tol);
    std::printf("%s: largest log-probability difference %.6f (tolerance %.6f)\n", c["name"].get<std::string>().c_str(),
                got.worst, tol);
    EXPECT_LE(got.worst, tol);
    EXPECT_GE(got.fewest_shared, 6u);  // the same top 8, but for near-ties at its end
    EXPECT_EQ(got.top1_misses, 0);
  }
}

// The comparison sees each tile: the two-image prompt with the second image's tiles (1 x 2) taking
// the first's place is refused by the ids check, so swap within what fits: the same tokens with
// the features of each tile of the first image rotated by one tile are far from the golden.
TEST_F(VlmIdefics3Logits, TilesInAnotherOrderDoNotMatch) {
  Model model = load();
  Engine engine(model);
  const double tol = moe_tolerance();
  const auto& c = golden_["cases"][0];
  std::vector<int32_t> ids;
  std::vector<PromptImage> placed = place(engine, model, c, c["images"].get<std::vector<std::string>>(), ids);
  ASSERT_EQ(placed.size(), 5u);  // 2 x 2 tiles and the global one, each its own span of rows
  // Each span reads the next tile's rows (the global tile reads the first tile's).
  for (size_t i = 0; i < placed.size(); ++i) {
    placed[i].embeddings_row = (static_cast<int64_t>(i + 1) % 5) * placed[i].n_tokens;
  }
  const Comparison got = compare(c, prompt_rows(engine, ids, placed), tol);
  std::printf("tiles rotated: largest difference %.4f, fewest shared %zu, top-1 misses %d\n", got.worst,
              got.fewest_shared, got.top1_misses);
  EXPECT_GT(got.worst, 10 * tol);
  EXPECT_GT(got.top1_misses, 0);
}

// The layout's text, each piece's positions spelled as "<image>" runs, is the string
// Idefics3Processor writes for grids the test images do not give (an unsplit image, 3 x 2, 1 x 4).
TEST(VlmIdefics3Layout, IsTheProcessorsTextForOtherGrids) {
  const nlohmann::json golden = vision_golden("idefics3_logits");
  for (const auto& p : golden["processor_texts"]) {
    std::string text;
    for (const EncodedImage::Piece& piece : vision::idefics3_prompt_layout(p["rows"].get<int>(), p["cols"].get<int>(),
                                                                           p["tokens_per_tile"].get<int64_t>())) {
      text += piece.text;
      for (int64_t i = 0; i < piece.n_tokens; ++i) text += "<image>";
    }
    EXPECT_EQ(text, p["text"].get<std::string>()) << p["rows"] << " x " << p["cols"];
  }
}

// The projector's tile markers must be tokens of the language model: the tiny LLaVA's text model
// has the same width and "<image>", but no "<fake_token_around_image>", so it is refused at load
// (its tokenizer would spell the marker as characters).
TEST(VlmIdefics3Load, RefusesALanguageModelWithoutTheTileMarkers) {
  LUMEN_REQUIRE_TINY_MMPROJ("idefics3");
  const std::string llava_text = std::string(LUMEN_GENERATED_DIR) + "/vlm-llava.text.gguf";
  if (!std::filesystem::exists(llava_text)) GTEST_SKIP() << llava_text << " is missing (fixture vlm_llava_text_file)";
  ModelOptions options;
  options.mmproj = tiny_mmproj_path("idefics3");
  options.threads = 1;
  try {
    Model::load(llava_text, options);
    ADD_FAILURE() << "the Idefics3 projector loaded beside a model without its tokens";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"<fake_token_around_image>\""), std::string::npos) << e.what();
  }
  // With its own language model, every marker of a grid up to 2 x 2 (64 / 32) is one token.
  options.mmproj = tiny_mmproj_path("idefics3");
  const Model model = Model::load(text_model_path(), options);
  const std::vector<std::string> tokens = model.image_encoder()->control_tokens();
  EXPECT_EQ(tokens.size(), 2u + 1u + 4u);
  EXPECT_EQ(tokens.back(), "<row_2_col_2>");
}

}  // namespace
}  // namespace lumen::testing
