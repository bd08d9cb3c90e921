// The KV pool sized from the device memory left free (gpu_memory_utilization) must leave the
// largest step its memory (engine/largest_step_reserve.h). On the simulated device, whose memory
// a test can make small (LUMEN_CUDA_SIM_MEMORY_MB): with 64 MiB free beside the weights, a step of
// max_num_batched_tokens tokens, one of its requests asking every prompt row's log-probabilities,
// needs more than the 10% the pool would leave had it been sized first. That step must run and
// every request finish; and with too little memory for the step at all, the engine must refuse at
// construction, naming the step, instead of failing the requests inside it.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>  // the simulated device's (sim/include)

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "lumen/engine.h"
#include "lumen/error.h"
#include "scoped_env.h"
#include "synth_model_file.h"
#include "tiny_decode_sequence.h"

namespace lumen {
namespace {

constexpr int64_t kStepTokens = 128;

// The simulated device's size for the scope of a test: what is in use now plus `free_mib`.
std::string in_use_plus(size_t free_mib) {
  size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  const size_t used_mib = (total - free + (size_t{1} << 20) - 1) >> 20;
  return std::to_string(used_mib + free_mib);
}

// The pool sized from the free memory, for sequences as long as the model allows (so the budget,
// not max_num_seqs x the longest sequence, is what limits it).
EngineConfig sized_from_free_memory() {
  EngineConfig c;
  c.block_size = 16;
  c.max_num_seqs = 64;  // 64 x 2 048 tokens x 1 KiB of K/V: more than the budget
  c.max_num_batched_tokens = kStepTokens;
  c.gpu_memory_utilization = 0.9;
  return c;
}

class SimLargestStep : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testing::tiny_llama_vocabulary())) {
      GTEST_SKIP() << "no vocabulary at " << testing::tiny_llama_vocabulary();
    }
    file_.emplace(testing::tiny_llama(7));
    backend_.emplace(0, backend::CudaBackendOptions{});
    model_.emplace(engine::LoadedModel::load(file_->path(), *backend_));
  }
  Model handle() { return engine::borrow_model(*model_, *backend_); }

  std::optional<testing::SynthModelFile> file_;
  std::optional<backend::CudaBackend> backend_;
  std::optional<engine::LoadedModel> model_;
};

TEST_F(SimLargestStep, AFullStepRunsBesideAPoolSizedFromTheFreeMemory) {
  const testing::ScopedEnv device("LUMEN_CUDA_SIM_MEMORY_MB", in_use_plus(64).c_str());
  Engine engine(handle(), sized_from_free_memory());
  // Four prompts filling one step, the first asking every prompt row's log-probabilities.
  std::vector<RequestHandle> requests;
  for (int r = 0; r < 4; ++r) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 3;
    p.ignore_eos = true;
    if (r == 0) p.prompt_logprobs = 1;
    std::vector<int32_t> prompt(kStepTokens / 4);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = 300 + static_cast<int32_t>((r * 97 + i * 31) % 20000);
    requests.push_back(engine.add_request(prompt, p));
  }
  while (engine.has_unfinished()) engine.step();
  for (RequestHandle& h : requests) {
    const GenerationResult result = h.collect();
    EXPECT_EQ(result.finish, FinishReason::Length) << result.error;
    EXPECT_EQ(result.tokens.size(), 3u);
  }
  EXPECT_GE(engine.stats().steps, 3u);
}

TEST_F(SimLargestStep, TooLittleMemoryForTheStepIsRefusedAtConstruction) {
  // Less than the step's logits rows alone (128 x 32 000 floats).
  const testing::ScopedEnv device("LUMEN_CUDA_SIM_MEMORY_MB", in_use_plus(2).c_str());
  try {
    Engine engine(handle(), sized_from_free_memory());
    FAIL() << "an engine was made whose largest step cannot fit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("largest step (128 tokens"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not fit in the device memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen
