// Replayed decode steps (CUDA graphs, backend/cuda/step_graphs.h) for several owners on one CUDA
// backend. A recording names the memory its launches read and write; steps of the same shape over
// another K/V cache or another model must not replay it. The simulated device
// (tests/unit/cuda_sim) found two engines on one model doing so: a swap-preemption test's second
// engine decoded over the first one's cache. Built twice: over the simulated device
// (sim_step_graphs_tests, every CI run) and in cuda_engine_tests for a GPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "engine/loaded_model.h"
#include "synth_model_file.h"
#include "tiny_decode_sequence.h"

namespace lumen {
namespace {

backend::CudaBackendOptions options(bool step_graphs) {
  backend::CudaBackendOptions o;
  o.step_graphs = step_graphs;
  o.gemv = backend::GemvKernels::Tiled;  // not chosen by timing, which two backends may read apart
  return o;
}

// Two sequences in two caches of one model (and, with `other_model`, a third on a second model),
// every cache allocated before the first step, decoded in turns: each step has the shape of the
// others, so only the step's owners tell the recordings apart. The logits of every step, in order.
std::vector<std::vector<float>> decode_in_turns(const std::string& path, const std::string& other_model,
                                                bool step_graphs, backend::StepReplayStats* stats) {
  backend::CudaBackend backend(0, options(step_graphs));
  engine::LoadedModel model = engine::LoadedModel::load(path, backend);
  std::vector<engine::LoadedModel> others;
  if (!other_model.empty()) others.push_back(engine::LoadedModel::load(other_model, backend));
  std::vector<testing::TinyDecodeSequence> seqs;
  seqs.reserve(3);
  seqs.emplace_back(model, backend, 100, 9);
  seqs.emplace_back(model, backend, 2000, 13);
  if (!others.empty()) seqs.emplace_back(others[0], backend, 900, 11);
  std::vector<std::vector<float>> out;
  for (int round = 0; round < 5; ++round) {
    for (testing::TinyDecodeSequence& seq : seqs) out.push_back(seq.step());
  }
  if (stats != nullptr) *stats = backend.step_replay_stats();
  return out;
}

void expect_replays_match_eager_steps(const std::string& path, const std::string& other_model) {
  backend::StepReplayStats stats;
  const std::vector<std::vector<float>> replayed = decode_in_turns(path, other_model, true, &stats);
  const std::vector<std::vector<float>> eager = decode_in_turns(path, other_model, false, nullptr);
  // Each owner's steps were recorded (a recording shared by owners is recorded once) and the
  // recordings replayed.
  const size_t owners = other_model.empty() ? 2 : 3;
  EXPECT_GE(stats.recorded, owners);
  EXPECT_EQ(stats.refused, 0u);
  EXPECT_GE(stats.replayed, owners);
  ASSERT_EQ(replayed.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    // A replay repeats the eager step's launches: the same bits.
    ASSERT_EQ(replayed[i], eager[i]) << "step " << i / owners << " of sequence " << i % owners;
  }
}

class StepGraphOwners : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
    if (!std::filesystem::exists(testing::tiny_llama_vocabulary()))
      GTEST_SKIP() << "no vocabulary at " << testing::tiny_llama_vocabulary();
    // The variable overrides the options (gpu_check.sh engine's eager pass): no recordings then.
    if (const char* graphs = std::getenv("LUMEN_CUDA_GRAPHS"); graphs != nullptr && std::string(graphs) == "0") {
      GTEST_SKIP() << "LUMEN_CUDA_GRAPHS=0";
    }
  }
};

TEST_F(StepGraphOwners, TwoCachesOfOneModelEachReplayTheirOwnRecording) {
  const testing::SynthModelFile model(testing::tiny_llama(5));
  expect_replays_match_eager_steps(model.path(), "");
}

TEST_F(StepGraphOwners, TwoModelsOfOneShapeEachReplayTheirOwnRecording) {
  const testing::SynthModelFile model(testing::tiny_llama(5)),
      draft(testing::tiny_llama(6));  // a draft model of its target's shape, as speculation has
  expect_replays_match_eager_steps(model.path(), draft.path());
}

}  // namespace
}  // namespace lumen
