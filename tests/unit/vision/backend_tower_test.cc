// The ViT tower as backend ops (vision/backend_tower.h), as a GPU runs it, here on a CPU backend
// of its own (and the projector's linears: ProjectorFamily::project_on_backend, final_linear): every family's
// features against transformers' (the bound the host tower meets) and against the host tower's, one op of each kind per
// layer seen by an observer, batches split into groups giving what one image alone gives, and a backend that lacks an
// op leaving the tower on the CPU's host steps with the reason in tower_placement().
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "../backend_needs/limited_backend.h"
#include "backend/op_observer.h"
#include "vision/vision_model.h"
#include "feature_difference.h"
#include "vision_test_files.h"

namespace lumen::vision {
namespace {

using testing::relative_difference;
using testing::tiny_mmproj_path;
using testing::vision_golden;

// Counts the ops the tower backend runs, by kind.
class OpCounter : public backend::OpObserver {
 public:
  void before_op(const backend::OpCall& call) override { ++counts[static_cast<size_t>(call.kind)]; }
  int64_t count(backend::OpKind kind) const { return counts[static_cast<size_t>(kind)]; }
  std::array<int64_t, backend::kOpKindCount> counts{};
};

std::vector<float> golden_features(const nlohmann::json& golden) {
  std::vector<float> out;
  for (const auto& row : golden["features"]) {
    for (const auto& v : row) out.push_back(v.get<float>());
  }
  return out;
}

class VisionBackendTower : public ::testing::TestWithParam<const char*> {};

TEST_P(VisionBackendTower, BackendOpsGiveTheHostTowersFeatures) {
  LUMEN_REQUIRE_TINY_MMPROJ(GetParam());
  const nlohmann::json golden = vision_golden(GetParam());
  const std::vector<float> pixels = golden["pixels_chw"].get<std::vector<float>>();
  const int width = golden["width"].get<int>(), height = golden["height"].get<int>();
  const auto host = VisionModel::load(tiny_mmproj_path(GetParam()), {.threads = 2});
  auto tower_backend = std::make_shared<backend::CpuBackend>(2);
  OpCounter ops;
  tower_backend->add_observer(&ops);
  const auto on_backend =
      VisionModel::load(tiny_mmproj_path(GetParam()), {.threads = 2, .tower_backend = tower_backend});
  EXPECT_EQ(host->tower_placement(), "cpu");
  EXPECT_EQ(on_backend->tower_placement(), "cpu");  // the tower backend's name

  const std::vector<float> want = host->encode(pixels, width, height);
  const std::vector<float> got = on_backend->encode(pixels, width, height);
  const int64_t layers = on_backend->hparams().n_layer;
  EXPECT_EQ(ops.count(backend::OpKind::BidirectionalAttention), layers);
  // Two a layer, and CLIP's pre-LayerNorm (LLaVA) or SigLIP's post-LayerNorm (Gemma 3, Idefics3).
  EXPECT_EQ(ops.count(backend::OpKind::LayerNorm), 2 * layers + 1);
  // The tower's output comes back, its projector's input goes up again (LLaVA's rows as they are,
  // Gemma 3's pooled and normed, Idefics3's shuffled on the host), the projector's linears run
  // there, and the features come back: LLaVA's MLP has one activation more.
  EXPECT_EQ(ops.count(backend::OpKind::CopyToHost), 2);
  EXPECT_EQ(ops.count(backend::OpKind::CopyFromHost), 1 + 1);  // the patches, the projector's rows
  const bool mlp = std::string(GetParam()) == "llava";
  EXPECT_EQ(ops.count(backend::OpKind::Activation), layers + (mlp ? 1 : 0));
  EXPECT_EQ(ops.count(backend::OpKind::Matmul), 3 * layers + 1 + (mlp ? 2 : 1));  // o, up, down; patches
  const double to_host = relative_difference(got, want),
               to_transformers = relative_difference(got, golden_features(golden));
  std::printf("%s: backend tower vs host tower %.2e, vs transformers %.2e\n", GetParam(), to_host, to_transformers);
  EXPECT_LT(to_host, 1e-5);
  EXPECT_LT(to_transformers, 1e-4);  // vision_golden_test.cc's bound

  // Three images at once, the tower run in groups of one image (max_rows below a tower's rows),
  // give what each gives alone.
  std::vector<float> three;
  std::vector<float> alone;
  for (int i = 0; i < 3; ++i) {
    std::vector<float> image = pixels;
    for (float& v : image) v = v * (1.0f - 0.2f * static_cast<float>(i)) + 0.05f * static_cast<float>(i);
    three.insert(three.end(), image.begin(), image.end());
    const std::vector<float> one = on_backend->encode(image, width, height);
    alone.insert(alone.end(), one.begin(), one.end());
  }
  EXPECT_LT(relative_difference(on_backend->encode_batch(three, 3, width, height), alone), 1e-6);
  tower_backend->remove_observer(&ops);
}

INSTANTIATE_TEST_SUITE_P(Families, VisionBackendTower, ::testing::Values("llava", "gemma3", "idefics3"));

// A backend that lacks what the tower needs (the LayerNorm blocks, heads as wide, the weights'
// type) is asked nothing at all: the tower stays on the CPU, which says why, and encodes as before.
TEST(VisionBackendTowerRefusal, ABackendWithoutWhatTheTowerNeedsLeavesItOnTheCpu) {
  LUMEN_REQUIRE_TINY_MMPROJ("gemma3");
  const nlohmann::json golden = vision_golden("gemma3");
  const std::vector<float> pixels = golden["pixels_chw"].get<std::vector<float>>();
  const int width = golden["width"].get<int>(), height = golden["height"].get<int>();
  const auto host = VisionModel::load(tiny_mmproj_path("gemma3"), {.threads = 2});
  const std::vector<float> want = host->encode(pixels, width, height);
  testing::LimitedSupport no_layer_norm = testing::everything(), narrow = testing::everything(),
                          no_f16 = testing::everything();
  no_layer_norm.features.erase(backend::BackendFeature::LayerNorm);
  narrow.max_head_dim = 4;
  no_f16.weight_types.erase(tensor::DType::F16);
  const std::pair<testing::LimitedSupport, std::string> cases[] = {
      {no_layer_norm, "cpu (the limited backend has no LayerNorm blocks (layer_norm, activation))"},
      {narrow, "cpu (the tower's heads have 16 values, the limited backend's at most 4)"},
      {no_f16, "cpu (the limited backend does not read F16 weights)"},
  };
  for (const auto& [support, placement] : cases) {
    auto lacking = std::make_shared<testing::LimitedBackend>(support);
    const auto model = VisionModel::load(tiny_mmproj_path("gemma3"), {.threads = 2, .tower_backend = lacking});
    EXPECT_EQ(model->tower_placement().substr(0, placement.size()), placement) << model->tower_placement();
    EXPECT_EQ(model->encode(pixels, width, height), want);  // LimitedBackend fails any op it is asked
  }
}

}  // namespace
}  // namespace lumen::vision
