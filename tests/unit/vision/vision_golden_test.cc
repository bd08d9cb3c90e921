// The vision encoder against Hugging Face transformers: the image features (the projector's
// output rows, what replaces the image tokens) of a fixed pixel tensor, for tiny random models
// whose golden scripts/make_vlm_models.py wrote with transformers (f32, CPU) from the same
// weights. The error is measured relative to the features' largest magnitude: the f16 file's
// matrices hold exactly the golden's weights (drawn on f16's grid), so what is left is the
// kernels' rounding of activations (the f16 matmul rounds x to f16, as ggml's does).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "gguf/value.h"
#include "tensor/quantize.h"
#include "vision/vision_model.h"
#include "vision_test_files.h"

namespace lumen::vision {
namespace {

using testing::rewrite_gguf;
using testing::tiny_mmproj_path;
using testing::vision_golden;

// Relative to the features' largest magnitude. Measured on the f16 files: llava 1.1e-6, gemma3
// and idefics3 in the log of FeaturesMatchTransformers; f32 matrices: 9.6e-7.
constexpr double kBound = 1e-4;

// clip.vision.feature_layer [1]: the hidden state after the first layer.
gguf::Array layer_one() {
  gguf::Array a{gguf::ValueType::I32, 1, {}, {}, {}};
  const int32_t one = 1;
  a.raw.assign(reinterpret_cast<const uint8_t*>(&one), reinterpret_cast<const uint8_t*>(&one) + sizeof(one));
  return a;
}

struct Agreement {
  double max_abs_diff = 0.0, max_abs_ref = 0.0;
  double relative() const { return max_abs_diff / max_abs_ref; }
};

Agreement compare(const VisionModel& model, const nlohmann::json& golden) {
  const std::vector<float> pixels = golden["pixels_chw"].get<std::vector<float>>();
  const std::vector<float> got = model.encode(pixels, golden["width"].get<int>(), golden["height"].get<int>());
  const auto& rows = golden["features"];
  EXPECT_EQ(static_cast<int64_t>(rows.size()), model.image_tokens());
  EXPECT_EQ(got.size(), rows.size() * rows[0].size());
  Agreement a;
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < rows[r].size(); ++c) {
      const double want = rows[r][c].get<double>();
      a.max_abs_ref = std::max(a.max_abs_ref, std::abs(want));
      a.max_abs_diff = std::max(a.max_abs_diff, std::abs(want - got[r * rows[r].size() + c]));
    }
  }
  return a;
}

// A copy of the tiny file with every matrix (f16 in the file) stored as `type` instead; a
// quantized copy keeps the patch convolution in f16, as llama.cpp's quantizer does (its rows
// are patch_size wide, not whole blocks).
std::string with_matrices_as(const std::string& name, tensor::DType type) {
  const std::string path =
      std::string(LUMEN_GENERATED_DIR) + "/vlm-" + name + ".mmproj." + std::string(tensor::dtype_name(type)) + ".gguf";
  rewrite_gguf(tiny_mmproj_path(name), path,
               testing::edit_tensors([&](const gguf::TensorInfo& t, tensor::DType& to, std::vector<int64_t>&,
                                         std::vector<uint8_t>& bytes) {
                 if (t.type != tensor::DType::F16) return true;
                 if (tensor::dtype_info(type).block_elements > 1 && t.dims.size() > 2) return true;
                 std::vector<float> values(static_cast<size_t>(t.elements));
                 tensor::dequantize_row(t.type, t.data, values.data(), t.elements);
                 const auto row = tensor::row_bytes(type, t.dims[0]);
                 bytes.assign(static_cast<size_t>(*row * t.rows()), 0);
                 for (int64_t r = 0; r < t.rows(); ++r) {
                   tensor::quantize_row(type, values.data() + r * t.dims[0], bytes.data() + r * *row, t.dims[0]);
                 }
                 to = type;
                 return true;
               }));
  return path;
}

TEST(VisionGolden, LlavaHparamsComeFromTheFile) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const auto model = VisionModel::load(tiny_mmproj_path("llava"), {.threads = 2});
  const VisionHParams& hp = model->hparams();
  const nlohmann::json config = vision_golden("llava")["config"];
  EXPECT_EQ(hp.projector_type, "mlp");
  EXPECT_EQ(hp.image_size, 32);
  EXPECT_EQ(hp.patch_size, 8);
  EXPECT_EQ(hp.n_embd, 64);
  // vision_feature_layer -2 of 3 layers: the file keeps 2, and all of them run.
  EXPECT_EQ(hp.n_layer, config["vision"]["num_hidden_layers"].get<int>() - 1);
  EXPECT_EQ(hp.ffn_act, Activation::QuickGelu);
  EXPECT_EQ(hp.resize, ResizeMode::ShortestEdgeCenterCrop);
  EXPECT_EQ(model->image_tokens(), 16);  // 4x4 patches, the class token dropped
  EXPECT_EQ(hp.n_embd_out, config["text_hidden"].get<int>());
  EXPECT_FLOAT_EQ(hp.mean[0], 0.48145466f);
  EXPECT_FLOAT_EQ(hp.std[2], 0.27577711f);
}

// Each family's tiny file (scripts/vlm_tiny_mmproj.py) against transformers' features.
class VisionFamilyGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(VisionFamilyGolden, FeaturesMatchTransformers) {
  LUMEN_REQUIRE_TINY_MMPROJ(GetParam());
  const auto model = VisionModel::load(tiny_mmproj_path(GetParam()), {.threads = 2});
  const Agreement a = compare(*model, vision_golden(GetParam()));
  std::printf("%s f16: max |lumen - transformers| %.3g of max |x| %.3g (relative %.2e)\n", GetParam(), a.max_abs_diff,
              a.max_abs_ref, a.relative());
  EXPECT_LT(a.relative(), kBound);
}

TEST_P(VisionFamilyGolden, TheConverterWrittenFileGivesTheSameFeatures) {
  // scripts/make_vlm_models.py keeps what llama.cpp's own converter wrote for the golden's
  // weights: a file from outside Lumen's writers must load and encode the same way.
  const std::string path =
      std::string(std::getenv("HOME")) + "/.cache/lumen/models/derived/vlm-" + GetParam() + ".mmproj.converter.gguf";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " is missing: scripts/make_vlm_models.py writes it (needs torch and transformers)";
  }
  const auto model = VisionModel::load(path, {.threads = 2});
  EXPECT_LT(compare(*model, vision_golden(GetParam())).relative(), kBound);
}

INSTANTIATE_TEST_SUITE_P(Families, VisionFamilyGolden, ::testing::Values("llava", "gemma3", "idefics3"));

TEST(VisionGolden, Gemma3AndIdefics3HparamsComeFromTheFile) {
  LUMEN_REQUIRE_TINY_MMPROJ("gemma3");
  LUMEN_REQUIRE_TINY_MMPROJ("idefics3");
  const auto gemma3 = VisionModel::load(tiny_mmproj_path("gemma3"), {.threads = 1});
  EXPECT_EQ(gemma3->hparams().merge, 2);  // 4x4 patches pooled to 2x2
  EXPECT_EQ(gemma3->image_tokens(), 4);
  EXPECT_EQ(gemma3->hparams().ffn_act, Activation::GeluTanh);
  EXPECT_EQ(gemma3->hparams().resize, ResizeMode::Squash);
  EXPECT_EQ(gemma3->hparams().n_embd_out, 96);
  const auto idefics3 = VisionModel::load(tiny_mmproj_path("idefics3"), {.threads = 1});
  EXPECT_EQ(idefics3->hparams().merge, 2);
  EXPECT_EQ(idefics3->image_tokens(), 4);
  EXPECT_EQ(idefics3->hparams().resize, ResizeMode::LongestEdgeTiles);
  EXPECT_EQ(idefics3->hparams().n_embd_out, 96);
}

TEST(VisionGolden, TheComparisonTellsALayerShortFromTheRightCount) {
  // llama.cpp's graph runs one layer fewer than a legacy LLaVA file holds (its issue 25817):
  // the golden must tell that apart from the right count, far outside the bound.
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const std::string path = std::string(LUMEN_GENERATED_DIR) + "/vlm-llava.one-layer-short.gguf";
  rewrite_gguf(
      tiny_mmproj_path("llava"), path,
      {[](gguf::Metadata& m) { m.set("clip.vision.feature_layer", gguf::Value::of_array(layer_one())); }, nullptr});
  const auto model = VisionModel::load(path, {.threads = 2});
  EXPECT_EQ(model->hparams().n_layer, 1);
  EXPECT_GT(compare(*model, vision_golden("llava")).relative(), 100 * kBound);
}

TEST(VisionGolden, LlavaWithF32AndQ8_0MatricesLoadAndAgree) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  // f32 holds the same numbers as the f16 file, so it agrees as closely; q8_0 rounds the weights
  // and the activations to 8 bits, which these random weights carry to a few percent (measured
  // 2.8e-2; a wrong layout is off by the features' own size).
  for (const auto& [type, bound] : {std::pair{tensor::DType::F32, kBound}, std::pair{tensor::DType::Q8_0, 6e-2}}) {
    const auto model = VisionModel::load(with_matrices_as("llava", type), {.threads = 2});
    const Agreement a = compare(*model, vision_golden("llava"));
    std::printf("llava %s: relative %.2e\n", std::string(tensor::dtype_name(type)).c_str(), a.relative());
    EXPECT_LT(a.relative(), bound) << tensor::dtype_name(type);
  }
}

TEST_P(VisionFamilyGolden, ABatchEncodesEachImageAsAlone) {
  // Two images in one batch (the golden's and its mirror image) share the matmuls but attend
  // and project apart: each comes out as it does alone.
  LUMEN_REQUIRE_TINY_MMPROJ(GetParam());
  const auto model = VisionModel::load(tiny_mmproj_path(GetParam()), {.threads = 2});
  const nlohmann::json golden = vision_golden(GetParam());
  const int size = golden["width"].get<int>();
  const std::vector<float> first = golden["pixels_chw"].get<std::vector<float>>();
  const std::vector<float> second(first.rbegin(), first.rend());
  std::vector<float> both = first;
  both.insert(both.end(), second.begin(), second.end());
  const std::vector<float> batch = model->encode_batch(both, 2, size, size);
  std::vector<float> alone = model->encode(first, size, size);
  const std::vector<float> alone_second = model->encode(second, size, size);
  alone.insert(alone.end(), alone_second.begin(), alone_second.end());
  ASSERT_EQ(batch.size(), alone.size());
  double worst = 0.0, largest = 0.0;
  for (size_t i = 0; i < batch.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(batch[i] - alone[i])));
    largest = std::max(largest, static_cast<double>(std::abs(alone[i])));
  }
  EXPECT_LT(worst, 1e-5 * largest);
  EXPECT_GT(std::abs(batch[0] - batch[batch.size() / 2]), 0.0f);  // the two images differ
  EXPECT_THROW((void)model->encode_batch(both, 3, size, size), Error);
  EXPECT_THROW((void)model->encode_batch({}, 0, size, size), Error);
}

TEST(VisionGolden, EncodeRefusesPixelsOfAnotherSize) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const auto model = VisionModel::load(tiny_mmproj_path("llava"), {.threads = 1});
  const std::vector<float> small(3 * 16 * 16, 0.0f);
  try {
    (void)model->encode(small, 16, 16);
    FAIL() << "encoded a 16x16 image with a 32x32 encoder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes 32x32 pixels, got 16x16"), std::string::npos) << e.what();
  }
  const std::vector<float> short_buffer(3 * 32 * 32 - 1, 0.0f);
  EXPECT_THROW((void)model->encode(short_buffer, 32, 32), Error);
  // The refusals changed nothing: the golden still comes out.
  EXPECT_LT(compare(*model, vision_golden("llava")).relative(), kBound);
}

}  // namespace
}  // namespace lumen::vision
