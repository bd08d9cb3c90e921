// Decode steps replayed from CUDA graphs (CudaBackendOptions::step_graphs, step_graphs.h) on the
// real model give the logits of the same steps run op by op, bit for bit: one sequence through
// the prompt and greedy continuation of every test prompt, and three sequences decoding
// together, one of them crossing a split bound of the decode attention (a new shape, recorded
// anew). The graphs must really have run: recorded at least once per shape, replayed for most
// steps, never given up. (Bit for bit, because a replay launches the same kernels on the same
// data; and the plan-free decode attention does the planned attention's arithmetic,
// tests/unit/cuda_host/decode_attention_test.cc.) Without a CUDA device or the model, skips.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "decode_together.h"
#include "engine/loaded_model.h"
#include "teacher_forced.h"

namespace lumen {
namespace {

using testing::gpu_test_model_path;

class CudaStepGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    if (!std::filesystem::exists(gpu_test_model_path())) GTEST_SKIP() << "no model at " << gpu_test_model_path();
  }

  static backend::CudaBackendOptions with_graphs(bool on) {
    backend::CudaBackendOptions options;
    options.step_graphs = on;
    return options;
  }
  // The constructor applies the LUMEN_CUDA_* variables (gpu_check.sh runs this file with
  // LUMEN_CUDA_GRAPHS=1 and other switches): step_graphs set again after it, the rest kept, so
  // both backends run the same kernels and only one replays.
  static void pin_graphs(backend::CudaBackend& backend, bool on) {
    backend::CudaBackendOptions options = backend.options();
    options.step_graphs = on;
    backend.set_options(options);
  }
};

TEST_F(CudaStepGraphs, OneSequenceDecodesAsWithoutGraphs) {
  backend::CudaBackend eager(0, with_graphs(false));
  backend::CudaBackend graphs(0, with_graphs(true));
  pin_graphs(eager, false);
  pin_graphs(graphs, true);
  engine::LoadedModel eager_model = engine::LoadedModel::load(gpu_test_model_path(), eager);
  engine::LoadedModel graph_model = engine::LoadedModel::load(gpu_test_model_path(), graphs);
  size_t decode_steps = 0;
  for (const char* text : testing::kPrompts) {
    const std::vector<int32_t> prompt = eager_model.tokenizer.encode(text, {.add_special = true});
    const std::vector<int32_t> continuation = testing::greedy_continuation(eager_model, eager, prompt);
    const auto want = testing::teacher_forced_logits(eager_model, eager, prompt, continuation);
    const auto got = testing::teacher_forced_logits(graph_model, graphs, prompt, continuation);
    ASSERT_EQ(got.size(), want.size());
    for (size_t at = 0; at < want.size(); ++at) ASSERT_EQ(got[at], want[at]) << text << ", row " << at;
    decode_steps += want.size() - 1;
  }
  const backend::StepReplayStats stats = graphs.step_replay_stats();
  EXPECT_EQ(stats.refused, 0u);
  EXPECT_GE(stats.recorded, 1u);
  EXPECT_GE(stats.replayed, decode_steps / 2) << stats.recorded << " recorded, " << stats.eager << " eager";
  EXPECT_EQ(eager.step_replay_stats().replayed, 0u);
}

TEST_F(CudaStepGraphs, ThreeSequencesDecodeAsWithoutGraphs) {
  backend::CudaBackend eager(0, with_graphs(false));
  backend::CudaBackend graphs(0, with_graphs(true));
  pin_graphs(eager, false);
  pin_graphs(graphs, true);
  engine::LoadedModel eager_model = engine::LoadedModel::load(gpu_test_model_path(), eager);
  engine::LoadedModel graph_model = engine::LoadedModel::load(gpu_test_model_path(), graphs);
  // Prompts of 480, 487 and 494 tokens: the third sequence's position passes 8 splits of 64
  // keys (512) at the 19th step, where the step shape's split bound doubles (a new recording).
  constexpr int kSteps = 40;
  const auto want = testing::decode_together(eager_model, eager, 3, kSteps, 480);
  const auto got = testing::decode_together(graph_model, graphs, 3, kSteps, 480);
  ASSERT_EQ(got.size(), want.size());
  for (size_t step = 0; step < want.size(); ++step) ASSERT_EQ(got[step], want[step]) << "decode step " << step;
  const backend::StepReplayStats stats = graphs.step_replay_stats();
  EXPECT_EQ(stats.refused, 0u);
  EXPECT_EQ(stats.recorded, 2u);  // one per split bound
  EXPECT_GE(stats.replayed, static_cast<uint64_t>(kSteps) - 4);
}

}  // namespace
}  // namespace lumen
