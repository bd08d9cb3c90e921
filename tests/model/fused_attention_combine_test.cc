// A decode step's one-pass attention with each item's splits merged by the item's last block
// (CudaBackendOptions::fused_attention_combine, attention.cu's combine_if_last) gives the logits
// of the same steps with the separate combine launch, bit for bit: three sequences of a tiny
// synthetic model (llama3-mini's shapes, and one layer of SmolLM2's) decoding together with
// contexts across several 64-key splits, replayed from
// CUDA graphs (the fusion is the plan-free decode attention's, which the steps laid out for graphs
// run; op by op, attention runs a host plan and its combine launch). The merge is the combine kernel's loop; what the
// fusion changes is which block runs it and when, so a count that was not reset, a block that merged before the others
// had written, or a replay that found stale counts would show as logits that differ. On the simulated device
// (sim_step_graphs_tests) blocks run one after another; on a GPU (cuda_engine_tests, scripts/gpu_check.sh) they run at
// once, which is the check of the fences.
#include <gtest/gtest.h>

#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "cuda_decode_prerequisites.h"
#include "decode_together.h"
#include "engine/loaded_model.h"
#include "synth_model_file.h"
#include "tiny_decode_sequence.h"

namespace lumen {
namespace {

// The model shapes: llama3-mini's 2 query heads a KV head, and one layer of SmolLM2's 3.
model::SynthOptions shape(bool smollm2) {
  model::SynthOptions options = testing::tiny_llama(11);
  if (smollm2) {
    options.preset = "smollm2-135m";
    options.block_count = 1;
  }
  return options;
}

class FusedAttentionCombine : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (const auto missing = testing::missing_cuda_decode_prerequisite()) GTEST_SKIP() << *missing;
  }

  // The one-pass attention (the fusion's only mode) from graphs, set after the constructor has
  // applied any LUMEN_CUDA_* variables, so the two backends differ in the fusion alone.
  static void pin(backend::CudaBackend& backend, bool fused) {
    backend::CudaBackendOptions options = backend.options();
    options.fused_attention_combine = fused;
    options.exact_f16_attention = false;
    options.step_graphs = true;
    backend.set_options(options);
  }
};

TEST_P(FusedAttentionCombine, DecodesAsTheSeparateCombine) {
  const testing::SynthModelFile file(shape(GetParam()));
  backend::CudaBackend separate(0);
  backend::CudaBackend fused(0);
  pin(separate, false);
  pin(fused, true);
  engine::LoadedModel separate_model = engine::LoadedModel::load(file.path(), separate);
  engine::LoadedModel fused_model = engine::LoadedModel::load(file.path(), fused);
  // Prompts of 120, 127 and 134 tokens, then 12 steps: 2 and 3 splits an item, and a new split
  // opening mid-run (position 128).
  constexpr int kSteps = 12;
  const auto want = testing::decode_together(separate_model, separate, 3, kSteps, 120);
  // Twice: a second run starts from the counts the first left, which must all be 0.
  for (int run = 0; run < 2; ++run) {
    const auto got = testing::decode_together(fused_model, fused, 3, kSteps, 120);
    ASSERT_EQ(got.size(), want.size());
    for (size_t step = 0; step < want.size(); ++step) {
      ASSERT_EQ(got[step], want[step]) << "run " << run << ", decode step " << step;
    }
  }
  EXPECT_GT(fused.fused_combine_calls(), 0u) << "no attention call took the fused combine";
  EXPECT_EQ(separate.fused_combine_calls(), 0u);
  EXPECT_GE(fused.step_replay_stats().replayed, 1u);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedAttentionCombine, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& shape_info) {
                           return shape_info.param ? "SmolLM2Group3" : "Llama3MiniGroup2";
                         });

}  // namespace
}  // namespace lumen
