// The three projector families end to end against llama.cpp's mtmd
// (tests/golden/vision/mtmd_logits.json, scripts/make_vlm_mtmd_logits_golden.py: libmtmd
// through llama-cpp-python on the same tiny files, images and prompts as the transformers
// logits goldens), every prompt position's top log-probabilities.
//
// mtmd and transformers do not always compute the same thing, and Lumen follows transformers:
// - the goldens' 37x23 and 20x14 images are resized by mtmd with its own filters (no
//   antialiasing) and by the processors with Pillow's, so there mtmd departs from transformers
//   by as much as Lumen departs from mtmd (checked: the two differences agree within the
//   tolerance), while on 32x32 images, which neither side resizes, Gemma 3 agrees with mtmd
//   within the tolerance (mtmd's image chunk decoded non-causally, as Lumen does);
// - LLaVA: llama.cpp's CLIP graph puts the class token after the patches, keeps rows 1..N and
//   runs one layer fewer (docs/vision.md), so even at 32x32 it is far from transformers; the
//   test pins that it is exactly as far from Lumen;
// - Idefics3 upsamples any image to its longest edge and resizes the global tile, so no image
//   reaches both encoders unresized; one colour survives any filter, so on uniform images of the
//   goldens' sizes (the same tiles and ids) both compute the same thing, and agree within the
//   tolerance.
// mtmd's rows come from an f32 KV cache without flash attention (llama.cpp's CPU flash attention
// rounds to f16 inside, about 0.01 on these Llamas: see the script).
// Everywhere, the rows before the first image are text only and must agree.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "lumen/engine.h"
#include "server/chat_images.h"
#include "vision_test_files.h"
#include "vlm_logits_compare.h"

namespace lumen::testing {
namespace {

std::string text_model_path(const std::string& family) {
  return std::string(LUMEN_GENERATED_DIR) + "/vlm-" + family + ".text.gguf";
}

// Rows [begin, end) of a case's top tokens and log-probabilities, as compare() reads them.
nlohmann::json rows_of(const nlohmann::json& c, const std::string& prefix, size_t begin, size_t end) {
  nlohmann::json out;
  for (const char* what : {"top_tokens", "top_logprobs"}) {
    const auto& all = c[prefix + what];
    out[what] = nlohmann::json(std::vector<nlohmann::json>(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                                           all.begin() + static_cast<std::ptrdiff_t>(end)));
  }
  return out;
}

class VlmMtmdLogits : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TINY_MMPROJ(GetParam());
    if (!std::filesystem::exists(text_model_path(GetParam()))) {
      GTEST_SKIP() << text_model_path(GetParam()) << " is missing: run scripts/vlm_tiny_" << GetParam()
                   << "_text.py " LUMEN_GENERATED_DIR " (ctest runs it as the fixture vlm_" << GetParam()
                   << "_text_file)";
    }
    golden_ = vision_golden("mtmd_logits")["families"][GetParam()];
  }

  nlohmann::json golden_;
};

// The mtmd golden was made from the files the transformers goldens were.
TEST_P(VlmMtmdLogits, MadeFromTheSameFilesAsTransformers) {
  EXPECT_EQ(golden_["text_gguf_sha256"], vision_golden(GetParam() + "_logits")["text_gguf_sha256"]);
  EXPECT_EQ(golden_["mmproj_sha256"], vision_golden(GetParam())["mmproj_sha256"]);
}

TEST_P(VlmMtmdLogits, OneAndTwoImagesAgainstMtmd) {
  const std::string family = GetParam();
  ModelOptions options;
  options.mmproj = tiny_mmproj_path(family);
  options.threads = 2;
  Model model = Model::load(text_model_path(family), options);
  Engine engine(model);
  const double tol = moe_tolerance();
  ASSERT_EQ(model.image_encoder()->image_attends_both_ways(), family == "gemma3");
  for (const auto& c : golden_["cases"]) {
    const std::string name = c["name"].get<std::string>();
    SCOPED_TRACE(family + " " + name);
    // mtmd wrote the processor's ids around every image (its tiles included), so its rows and
    // Lumen's are the same positions.
    ASSERT_TRUE(c["ids_as_transformers"].get<bool>());
    std::vector<Engine::ImageFeatures> encoded;
    for (const auto& image : c["images"]) {
      encoded.push_back(
          engine.encode_image(file_bytes(std::string(LUMEN_SOURCE_DIR) + "/" + image.get<std::string>())));
    }
    std::vector<int32_t> ids = c["marker_ids"].get<std::vector<int32_t>>();
    const std::vector<PromptImage> placed =
        server::expand_image_markers(model, model.image_encoder()->image_marker(), ids, encoded);
    // The same image spans (tiles) at the same positions, and the same text around them.
    const auto& spans = c["image_spans"];
    ASSERT_EQ(placed.size(), spans.size());
    std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
    for (size_t k = 0; k < placed.size(); ++k) {
      EXPECT_EQ(placed[k].first_token, spans[k][0].get<int64_t>());
      EXPECT_EQ(placed[k].n_tokens, spans[k][1].get<int64_t>());
      for (int64_t i = placed[k].first_token; i < placed[k].first_token + placed[k].n_tokens; ++i) {
        want[static_cast<size_t>(i)] = ids[static_cast<size_t>(i)];  // placeholders differ by family
      }
    }
    ASSERT_EQ(ids, want);
    const auto rows = prompt_rows(engine, ids, placed);

    // Text only before the first image: the same computation on both sides.
    const auto first = spans[0][0].get<size_t>();
    const std::vector<std::vector<TokenAlternative>> before(rows.begin(),
                                                            rows.begin() + static_cast<std::ptrdiff_t>(first));
    const Comparison text_rows = compare(rows_of(c, "", 0, first), before, tol);
    EXPECT_LE(text_rows.worst, tol);

    const Comparison got = compare(c, rows, 1e9);
    const double mtmd_vs_transformers = c["max_diff_vs_transformers"].get<double>();
    std::printf(
        "%s %s: largest log-probability difference from mtmd %.6f (transformers from mtmd %.6f; text rows before the "
        "image %.6f; tolerance %.6f)\n",
        family.c_str(), name.c_str(), got.worst, mtmd_vs_transformers, text_rows.worst, tol);
    const bool unresized = c.contains("transformers_top_tokens");
    if (unresized) {
      // The 32x32 cases carry transformers' rows too: Lumen holds to them as to the other goldens.
      const Comparison hf = compare(rows_of(c, "transformers_", 0, rows.size()), rows, tol);
      std::printf("%s %s: largest difference from transformers %.6f\n", family.c_str(), name.c_str(), hf.worst);
      EXPECT_LE(hf.worst, tol);
      EXPECT_EQ(hf.top1_misses, 0);
    }
    if (family != "llava" && unresized) {
      EXPECT_LE(got.worst, tol);  // the same computation: Lumen agrees with mtmd
      EXPECT_GE(got.fewest_shared, 6u);
      EXPECT_EQ(got.top1_misses, 0);
      continue;
    }
    // Elsewhere Lumen is as far from mtmd as transformers is (it computes what transformers does).
    EXPECT_NEAR(got.worst, mtmd_vs_transformers, tol);
    // mtmd computes something else (LLaVA's graph; Gemma 3's resize): far beyond noise. Idefics3's
    // resize moves the rows less (0.028 and 0.019 from Lumen, 0.020 and 0.017 from transformers).
    if (family != "idefics3") {
      EXPECT_GT(got.worst, 10 * tol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, VlmMtmdLogits, ::testing::Values("llava", "idefics3", "gemma3"));

}  // namespace
}  // namespace lumen::testing
