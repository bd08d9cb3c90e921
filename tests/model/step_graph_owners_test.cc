// Replayed decode steps (CUDA graphs, backend/cuda/step_graphs.h) for several owners on one CUDA
// backend. A recording names the memory its launches read and write; steps of the same shape over
// another K/V cache or another model must not replay it. The simulated device
// (tests/unit/cuda_sim) found two engines on one model doing so: a swap-preemption test's second
// engine decoded over the first one's cache. Built twice: over the simulated device
// (sim_step_graphs_tests, every CI run) and in cuda_engine_tests for a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "default_model_path.h"
#include "engine/loaded_model.h"
#include "model/kv_cache.h"
#include "synth_model_file.h"

namespace lumen {
namespace {

// The vocabulary the test models take: the shared test data's Llama one (32 000 tokens) where it
// is at hand, else the default model's (a GPU machine has that, carried by gpu_check.sh).
std::string vocabulary_path() {
  const std::string llama = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  return std::filesystem::exists(llama) ? llama : testing::default_model_path();
}

// A 2-layer llama in the shapes of `lumen synth llama3-mini` (256 wide, 64-dim heads), Q4_0, in a
// temporary file.
model::SynthOptions tiny_llama(uint64_t seed) {
  model::SynthOptions options;
  options.preset = "llama3-mini";
  options.type = tensor::DType::Q4_0;
  options.vocab_path = vocabulary_path();
  options.seed = seed;
  options.block_count = 2;
  options.threads = 2;
  return options;
}

// One sequence in its own cache: a prompt prefilled, then greedy decode steps of one token.
class Sequence {
 public:
  static constexpr int64_t kBlock = 16;
  static constexpr int64_t kBlocks = 4;

  Sequence(engine::LoadedModel& model, backend::Backend& backend, int32_t first_token, int64_t prompt_length)
      : model_(model), cache_(backend, model.hparams, kBlocks, kBlock), table_(kBlocks) {
    std::iota(table_.begin(), table_.end(), 0);
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_length)), positions(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = first_token + static_cast<int32_t>(37 * i % 3000);
    std::iota(positions.begin(), positions.end(), 0);
    forward(prompt, positions);
  }

  // The step's logits.
  const std::vector<float>& step() {
    const std::vector<int32_t> token = {next_}, position = {position_};
    forward(token, position);
    return logits_;
  }

 private:
  void forward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions) {
    const backend::SequenceSlice slice{0, static_cast<int64_t>(tokens.size()), position_, table_};
    const int32_t last = static_cast<int32_t>(tokens.size() - 1);
    logits_.assign(static_cast<size_t>(model_.hparams.vocab_size), 0.0f);
    model_.transformer->forward({tokens, positions, std::span(&slice, 1), std::span(&last, 1)}, cache_, logits_.data());
    next_ = static_cast<int32_t>(std::max_element(logits_.begin(), logits_.end()) - logits_.begin());
    position_ += static_cast<int32_t>(tokens.size());
  }

  engine::LoadedModel& model_;
  model::KvCache cache_;
  std::vector<int32_t> table_;
  std::vector<float> logits_;
  int32_t next_ = 0;
  int32_t position_ = 0;
};

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
  std::vector<Sequence> seqs;
  seqs.reserve(3);
  seqs.emplace_back(model, backend, 100, 9);
  seqs.emplace_back(model, backend, 2000, 13);
  if (!others.empty()) seqs.emplace_back(others[0], backend, 900, 11);
  std::vector<std::vector<float>> out;
  for (int round = 0; round < 5; ++round) {
    for (Sequence& seq : seqs) out.push_back(seq.step());
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
    if (!std::filesystem::exists(vocabulary_path())) GTEST_SKIP() << "no vocabulary at " << vocabulary_path();
    // The variable overrides the options (gpu_check.sh engine's eager pass): no recordings then.
    if (const char* graphs = std::getenv("LUMEN_CUDA_GRAPHS"); graphs != nullptr && std::string(graphs) == "0") {
      GTEST_SKIP() << "LUMEN_CUDA_GRAPHS=0";
    }
  }
};

TEST_F(StepGraphOwners, TwoCachesOfOneModelEachReplayTheirOwnRecording) {
  const testing::SynthModelFile model(tiny_llama(5));
  expect_replays_match_eager_steps(model.path(), "");
}

TEST_F(StepGraphOwners, TwoModelsOfOneShapeEachReplayTheirOwnRecording) {
  const testing::SynthModelFile model(tiny_llama(5)),
      draft(tiny_llama(6));  // a draft model of its target's shape, as speculation has
  expect_replays_match_eager_steps(model.path(), draft.path());
}

}  // namespace
}  // namespace lumen
