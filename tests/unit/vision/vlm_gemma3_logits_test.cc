// Gemma 3 with images end to end against Hugging Face transformers
// (tests/golden/vision/gemma3_logits.json, scripts/make_vlm_gemma3_logits_golden.py): the tiny
// Gemma 3 decoder (scripts/vlm_tiny_gemma3_text.py: QK-norm, post norms, GeGLU, local layers)
// loaded with its projector, real PNG files through the encoder and the engine's feature cache,
// the template's "<start_of_image>" expanded as lumen serve and lumen run do it; every position's
// top log-probabilities against Gemma3ForConditionalGeneration's.
//
// transformers has two answers: given the processor's token_type_ids (what Gemma3Processor
// drives), an image's positions attend to each other both ways; without them the mask is
// causal. Lumen computes the first (ImageEncoder::image_attends_both_ways, as llama.cpp's mtmd
// decodes a Gemma 3 image non-causally), also when chunked prefill would cut an image, and the
// test shows the causal answer is far from it (so the test can tell the two apart).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lumen/engine.h"
#include "lumen/error.h"
#include "server/chat_images.h"
#include "vision_test_files.h"
#include "vlm_logits_compare.h"

namespace lumen::testing {
namespace {

std::string text_model_path() { return std::string(LUMEN_GENERATED_DIR) + "/vlm-gemma3.text.gguf"; }

class VlmGemma3Logits : public ::testing::Test {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TINY_MMPROJ("gemma3");
    if (!std::filesystem::exists(text_model_path())) {
      GTEST_SKIP() << text_model_path() << " is missing: run scripts/vlm_tiny_gemma3_text.py " LUMEN_GENERATED_DIR
                   << " (it needs the default model's vocabulary; ctest runs it as the fixture vlm_gemma3_text_file)";
    }
    golden_ = vision_golden("gemma3_logits");
  }

  static Model load() {
    ModelOptions options;
    options.mmproj = tiny_mmproj_path("gemma3");
    options.threads = 2;
    return Model::load(text_model_path(), options);
  }

  nlohmann::json golden_;
};

// The case with the causal reference's rows under the names compare() reads.
nlohmann::json causal(const nlohmann::json& c) {
  nlohmann::json out = c;
  out["top_tokens"] = c["causal_top_tokens"];
  out["top_logprobs"] = c["causal_top_logprobs"];
  return out;
}

// Each case's prompt with its images placed as the server places them, checked against the
// processor's ids.
std::vector<PromptImage> place(Engine& engine, const Model& model, const nlohmann::json& c, int32_t soft,
                               std::vector<int32_t>& ids) {
  std::vector<Engine::ImageFeatures> encoded;
  for (const auto& image : c["images"]) {
    encoded.push_back(engine.encode_image(file_bytes(std::string(LUMEN_SOURCE_DIR) + "/" + image.get<std::string>())));
  }
  ids = c["marker_ids"].get<std::vector<int32_t>>();
  std::vector<PromptImage> placed =
      server::expand_image_markers(model, model.image_encoder()->image_marker(), ids, encoded);
  // The processor's ids, but at the image's positions: Lumen's placeholders are the marker's
  // id, transformers' "<image_soft_token>" (both replaced by the features).
  std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(ids.size(), want.size());
  EXPECT_EQ(placed.size(), encoded.size());
  for (const PromptImage& p : placed) {
    for (int64_t i = p.first_token; i < p.first_token + p.n_tokens && i < std::ssize(want); ++i) {
      EXPECT_EQ(want[static_cast<size_t>(i)], soft);
      want[static_cast<size_t>(i)] = ids[static_cast<size_t>(i)];
    }
  }
  EXPECT_EQ(ids, want);
  return placed;
}

// Whole prompts in one step, and prompts cut into chunks of 3 to 7 tokens (every cut would fall
// inside one of the 4-position images somewhere): the scheduler keeps each image in one chunk.
TEST_F(VlmGemma3Logits, OneAndTwoImagesMatchTransformers) {
  Model model = load();
  ASSERT_TRUE(model.image_encoder()->image_attends_both_ways());
  const double tol = moe_tolerance();
  const auto soft = golden_["image_soft_token_id"].get<int32_t>();
  for (const int64_t step_tokens : {512, 7, 5, 4}) {
    EngineConfig config;
    config.max_num_batched_tokens = step_tokens;
    Engine engine(model, config);
    for (const auto& c : golden_["cases"]) {
      SCOPED_TRACE(c["name"].get<std::string>() + ", " + std::to_string(step_tokens) + " tokens a step");
      std::vector<int32_t> ids;
      const std::vector<PromptImage> placed = place(engine, model, c, soft, ids);
      const auto rows = prompt_rows(engine, ids, placed);
      const Comparison got = compare(c, rows, tol);
      const Comparison causal_one = compare(causal(c), rows, 1e9);
      std::printf(
          "%s, %lld tokens a step: largest log-probability difference %.6f from the reference whose images attend "
          "both ways (tolerance %.6f); %.4f from the causal one\n",
          c["name"].get<std::string>().c_str(), static_cast<long long>(step_tokens), got.worst, tol, causal_one.worst);
      EXPECT_LE(got.worst, tol);
      EXPECT_GE(got.fewest_shared, 6u);
      EXPECT_EQ(got.top1_misses, 0);
      EXPECT_GT(causal_one.worst, 10 * tol);  // the two references differ: the test tells them apart
    }
  }
}

// An image longer than a step can hold cannot attend both ways: refused when added, clearly.
TEST_F(VlmGemma3Logits, AnImageLongerThanAStepIsRefused) {
  Model model = load();
  EngineConfig config;
  config.max_num_batched_tokens = 3;
  Engine engine(model, config);
  std::vector<int32_t> ids;
  const std::vector<PromptImage> placed =
      place(engine, model, golden_["cases"][0], golden_["image_soft_token_id"].get<int32_t>(), ids);
  SamplingParams params;
  params.max_tokens = 1;
  try {
    engine.add_request_n(ids, params, 0, 0, 0, placed);
    FAIL() << "an image of 4 positions was taken with 3 tokens a step";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_num_batched_tokens is 3: raise it to at least 4"), std::string::npos)
        << e.what();
  }
}

// The image rows matter: the one-image prompt with the second PNG's features is far off.
TEST_F(VlmGemma3Logits, AnotherImageDoesNotMatch) {
  Model model = load();
  Engine engine(model);
  const double tol = moe_tolerance();
  const auto& c = golden_["cases"][0];
  std::vector<Engine::ImageFeatures> encoded = {
      engine.encode_image(file_bytes(std::string(LUMEN_SOURCE_DIR) + "/tests/golden/image/palette_20x14.png"))};
  std::vector<int32_t> ids = c["marker_ids"].get<std::vector<int32_t>>();
  const std::vector<PromptImage> placed =
      server::expand_image_markers(model, model.image_encoder()->image_marker(), ids, encoded);
  const Comparison got = compare(c, prompt_rows(engine, ids, placed), tol);
  std::printf("another image: largest difference %.4f, top-1 misses %d\n", got.worst, got.top1_misses);
  EXPECT_GT(got.worst, 10 * tol);
}

}  // namespace
}  // namespace lumen::testing
