// What a replayed decode step asks of the host, counted by the simulated device's ledger
// (tests/unit/cuda_sim/sim/runtime_api.h): one graph launch, the step's one upload of its metadata
// and one copy back, the wait for that copy, and nothing else: no allocation, and no launch, fill or GEMM queued
// outside the recording. Each of those costs host time a GPU step waits on (a launch is a few
// microseconds, a decode step of a 1B model 1.5 ms), and a step that allocates or copies inside
// itself could not have been recorded. The simulated device only: a GPU has no such ledger.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "engine/loaded_model.h"
#include "engine/single_sequence_forward.h"
#include "sampling/sampler.h"
#include <cuda_runtime_api.h>  // the simulated device's (sim/include), with its ledger
#include "synth_model_file.h"
#include "tiny_decode_sequence.h"

namespace lumen {
namespace {

using cuda_sim::Ledger;
using cuda_sim::Work;

uint64_t queued(const Ledger& after, const Ledger& before, Work kind) {
  const auto k = static_cast<size_t>(kind);
  return after.queued[k] - before.queued[k];
}

// The tiny model on the simulated device (tiled GEMV) for the tests that replay steps; skips
// without the vocabulary or with recordings switched off.
class RecordedSteps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testing::tiny_llama_vocabulary())) {
      GTEST_SKIP() << "no vocabulary at " << testing::tiny_llama_vocabulary();
    }
    if (const char* graphs = std::getenv("LUMEN_CUDA_GRAPHS"); graphs != nullptr && std::string(graphs) == "0") {
      GTEST_SKIP() << "LUMEN_CUDA_GRAPHS=0: no step is recorded";
    }
    file_.emplace(testing::tiny_llama(5));
    backend::CudaBackendOptions options;
    options.gemv = backend::GemvKernels::Tiled;
    backend_.emplace(0, options);
    model_.emplace(engine::LoadedModel::load(file_->path(), *backend_));
  }

  std::optional<testing::SynthModelFile> file_;
  std::optional<backend::CudaBackend> backend_;
  std::optional<engine::LoadedModel> model_;
};

using SimStepLedger = RecordedSteps;

TEST_F(SimStepLedger, AReplayedDecodeStepIsOneGraphLaunchOneUploadAndOneCopyBack) {
  backend::CudaBackend& backend = *backend_;
  engine::LoadedModel& model = *model_;
  testing::TinyDecodeSequence seq(model, backend, 100, 9);
  // Warm-up: the shape's first steps run eagerly, then one is recorded.
  for (int i = 0; i < 8 && backend.step_replay_stats().replayed == 0; ++i) seq.step();
  ASSERT_GT(backend.step_replay_stats().replayed, 0u) << "no decode step was replayed";
  // Why the steps before ran eagerly: the prompt's, and the decode shape's warm-up.
  const backend::StepReplayStats warm = backend.step_replay_stats();
  EXPECT_EQ(warm.eager_not_decode, 1u);
  EXPECT_GE(warm.eager_warming, 1u);
  EXPECT_EQ(warm.eager, warm.eager_not_decode + warm.eager_warming);
  EXPECT_EQ(warm.eager_refused + warm.eager_over_limit + warm.refused, 0u);

  constexpr uint64_t kSteps = 4;
  const uint64_t replayed_before = backend.step_replay_stats().replayed;
  const Ledger before = cuda_sim::ledger();
  for (uint64_t i = 0; i < kSteps; ++i) seq.step();
  const Ledger after = cuda_sim::ledger();
  ASSERT_EQ(backend.step_replay_stats().replayed - replayed_before, kSteps) << "every step replayed";

  EXPECT_EQ(queued(after, before, Work::Graph), kSteps);
  EXPECT_EQ(queued(after, before, Work::CopyToDevice), kSteps) << "one upload a step";
  EXPECT_EQ(queued(after, before, Work::CopyToHost), kSteps) << "one copy back a step (the logits)";
  EXPECT_EQ(queued(after, before, Work::Kernel), 0u) << "every launch inside the recording";
  EXPECT_EQ(queued(after, before, Work::Fill), 0u);
  EXPECT_EQ(queued(after, before, Work::Gemm), 0u);
  EXPECT_EQ(queued(after, before, Work::CopyOnDevice), 0u);
  EXPECT_EQ(after.allocations - before.allocations, 0u) << "a step allocates nothing";
  // Two waits a step: for its copy back, and StepUploads::begin's for the last step's upload to
  // have left the pinned buffer it refills (long finished by then: an event query's cost).
  EXPECT_EQ(after.waits - before.waits, 2 * kSteps) << "a step waits for its copy back and nothing else";
  EXPECT_EQ(after.captures - before.captures, 0u) << "nothing recorded again";
  // The recordings ran: the device did a whole step's launches for each.
  const auto kernels = static_cast<size_t>(Work::Kernel);
  EXPECT_GE(after.ran[kernels] - before.ran[kernels], kSteps * 2 * 5) << "2 layers of at least 5 launches a step";
}

// Greedy tokens the way feed_greedy takes them, and the way a caller of feed() would, from the same
// prompt on one backend: the same tokens.
void expect_greedy_matches_argmax_of_the_logits(backend::Backend& backend, const std::string& path,
                                                uint64_t* greedy_bytes_back) {
  engine::LoadedModel model = engine::LoadedModel::load(path, backend);
  engine::SingleSequenceForward whole(model, backend, 64), greedy(model, backend, 64);
  std::vector<int32_t> prompt(9);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = 100 + static_cast<int32_t>(37 * i);
  int32_t a = sampling::argmax(whole.feed(prompt));
  int32_t b = greedy.feed_greedy(prompt);
  ASSERT_EQ(a, b) << "after the prompt";
  const Ledger before = cuda_sim::ledger();
  for (int step = 0; step < 6; ++step) {
    b = greedy.feed_greedy(std::span(&b, 1));
    if (step == 0 && greedy_bytes_back != nullptr) {
      const auto back = static_cast<size_t>(Work::CopyToHost);
      *greedy_bytes_back = cuda_sim::ledger().bytes_queued[back] - before.bytes_queued[back];
    }
    a = sampling::argmax(whole.feed(std::span(&a, 1)));
    ASSERT_EQ(a, b) << "step " << step;
  }
}

TEST(SimGreedyRows, AGreedyStepCopiesBackItsArgmaxAloneAndTheSameToken) {
  if (!std::filesystem::exists(testing::tiny_llama_vocabulary())) {
    GTEST_SKIP() << "no vocabulary at " << testing::tiny_llama_vocabulary();
  }
  const testing::SynthModelFile file(testing::tiny_llama(7));
  backend::CudaBackendOptions options;
  options.gemv = backend::GemvKernels::Tiled;
  backend::CudaBackend cuda(0, options);
  uint64_t bytes_back = 0;
  expect_greedy_matches_argmax_of_the_logits(cuda, file.path(), &bytes_back);
  EXPECT_EQ(bytes_back, sizeof(backend::RowArgmax)) << "a greedy step copies back its argmax, not its row";
  // The CPU leaves the row whole; feed_greedy reduces it on the host.
  backend::CpuBackend cpu(2);
  expect_greedy_matches_argmax_of_the_logits(cpu, file.path(), nullptr);
}

// A greedy step's argmax is launched at the end of its ops, so a replayed one is still one graph
// launch, one upload and one copy back (its argmax entry alone), with no launch outside the
// recording.
TEST_F(SimStepLedger, AReplayedGreedyStepLaunchesItsArgmaxInsideTheRecording) {
  backend::CudaBackend& backend = *backend_;
  engine::LoadedModel& model = *model_;
  engine::SingleSequenceForward greedy(model, backend, 64);
  std::vector<int32_t> prompt(9);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = 100 + static_cast<int32_t>(37 * i);
  int32_t token = greedy.feed_greedy(prompt);
  for (int i = 0; i < 8 && backend.step_replay_stats().replayed == 0; ++i)
    token = greedy.feed_greedy(std::span(&token, 1));
  ASSERT_GT(backend.step_replay_stats().replayed, 0u) << "no greedy step was replayed";

  const uint64_t replayed_before = backend.step_replay_stats().replayed;
  const Ledger before = cuda_sim::ledger();
  token = greedy.feed_greedy(std::span(&token, 1));
  const Ledger after = cuda_sim::ledger();
  ASSERT_EQ(backend.step_replay_stats().replayed - replayed_before, 1u);
  EXPECT_EQ(queued(after, before, Work::Graph), 1u);
  EXPECT_EQ(queued(after, before, Work::Kernel), 0u) << "the argmax launch inside the recording";
  EXPECT_EQ(queued(after, before, Work::CopyToDevice), 1u);
  EXPECT_EQ(queued(after, before, Work::CopyToHost), 1u);
  const auto back = static_cast<size_t>(Work::CopyToHost);
  EXPECT_EQ(after.bytes_queued[back] - before.bytes_queued[back], sizeof(backend::RowArgmax));
}

}  // namespace
}  // namespace lumen
