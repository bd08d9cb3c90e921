// Mixture-of-experts models through the serving engine: several requests at once, prefilled in
// chunks beside each other's decodes (continuous batching), must each produce the greedy tokens
// the bare single-sequence forward pass produces for them alone. With experts that means the
// step's tokens are routed and grouped by expert across sequences, and each token's result
// still does not depend on who shares its experts. Also checks the expert-load counts. The
// DeepSeek preset adds latent attention: its cache of one row per position is paged and
// shared the same way.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "engine/single_sequence_forward.h"
#include "lumen/engine.h"
#include "lumen_testdata.h"
#include "model/kv_cache.h"
#include "model/synth.h"
#include "sampling/sampler.h"

namespace lumen::testing {
namespace {

class EngineMoe : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TESTDATA();
    path_ = (std::filesystem::temp_directory_path() /
             (std::string("lumen_engine_moe_") + GetParam() + "_" + std::to_string(::getpid()) + ".gguf"))
                .string();
    model::SynthOptions options;
    options.preset = GetParam();
    options.type = tensor::DType::Q4_1;
    options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
    options.seed = 3;
    options.block_count = 2;
    options.threads = 2;
    model::write_synthetic_model(options, path_);
    model_ = std::make_unique<engine::LoadedModel>(engine::LoadedModel::load(path_, backend_));
  }
  void TearDown() override {
    model_.reset();
    if (!path_.empty()) std::filesystem::remove(path_);
  }

  std::vector<int32_t> alone(const std::vector<int32_t>& prompt, int64_t n) {
    engine::SingleSequenceForward forward(*model_, backend_, 256);
    std::vector<int32_t> out;
    std::span<const float> logits = forward.feed(prompt);
    for (int64_t i = 0; i < n; ++i) {
      int32_t token = sampling::argmax(logits);
      out.push_back(token);
      if (i + 1 < n) logits = forward.feed(std::span(&token, 1));
    }
    return out;
  }

  backend::CpuBackend backend_{2};
  std::string path_;
  std::unique_ptr<engine::LoadedModel> model_;
};

TEST_P(EngineMoe, ConcurrentRequestsMatchTheSingleSequenceReference) {
  struct Case {
    std::vector<int32_t> prompt;
    int64_t max_tokens;
  };
  std::vector<Case> cases;
  // Prompts of 5 to 50 tokens (in chunks of the 24-token step budget, across 8-token blocks)
  // and 6 to 21 new tokens; under the sanitizers 5 to 35 and 4 to 14, which still chunk the
  // longer prompts and run five of the six requests in the same steps.
  const int prompt_step = LUMEN_UNDER_SANITIZERS ? 6 : 9;
  const int64_t first_tokens = LUMEN_UNDER_SANITIZERS ? 4 : 6, token_step = LUMEN_UNDER_SANITIZERS ? 2 : 3;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> prompt;
    for (int j = 0; j < 5 + prompt_step * i; ++j) prompt.push_back(200 + (i * 131 + j * 47) % 30000);
    cases.push_back({prompt, first_tokens + token_step * i});
  }
  std::vector<std::vector<int32_t>> expected;
  for (const Case& c : cases) expected.push_back(alone(c.prompt, c.max_tokens));

  model::Transformer& transformer = *model_->transformer;
  ASSERT_NE(transformer.expert_load(), nullptr);
  transformer.reset_expert_load();

  EngineConfig config;
  config.block_size = 8;
  config.max_num_batched_tokens = 24;  // prompts prefill in chunks, beside the others' decodes
  config.kv_cache_bytes = 128 * static_cast<int64_t>(model::KvCache::bytes_per_block(model_->hparams, 8));
  Engine engine(engine::borrow_model(*model_, backend_), config);
  std::vector<RequestHandle> handles;
  for (const Case& c : cases) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = c.max_tokens;
    p.ignore_eos = true;
    handles.push_back(engine.add_request(c.prompt, p));
  }
  int64_t most_running = 0;
  while (engine.has_unfinished()) {
    engine.step();
    most_running = std::max(most_running, engine.stats().running);
  }
  EXPECT_GE(most_running, 4) << "the requests did not share steps";
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(handles[i].collect().tokens, expected[i]) << "request " << i;
  }

  // Every token the engine ran went to expert_used_count experts in every layer with experts
  // (DeepSeek's leading dense layers route none).
  const model::ExpertLoad& load = *transformer.expert_load();
  const uint64_t computed = engine.stats().computed_tokens;
  ASSERT_GT(computed, 0u);
  for (int64_t layer = 0; layer < load.layers; ++layer) {
    uint64_t routed = 0;
    for (int64_t e = 0; e < load.experts; ++e) routed += load.at(layer, e);
    const bool dense = static_cast<uint64_t>(layer) < model_->hparams.leading_dense_block_count;
    EXPECT_EQ(routed, dense ? 0 : computed * model_->hparams.expert_used_count) << "layer " << layer;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, EngineMoe,
                         ::testing::Values("qwen2moe-a2.7b-mini", "qwen3moe-mini", "olmoe-mini", "mixtral-mini",
                                           "deepseek2-lite-mini"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string name = p.param;
                           std::erase_if(name, [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); });
                           return name;
                         });

}  // namespace
}  // namespace lumen::testing
