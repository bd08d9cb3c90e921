#pragma once
// What the engine tests on the real default model share: the model, loaded once per suite, a
// text to cut prompts from, and the independent single-sequence reference.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "default_model_path.h"
#include "engine_test_backend.h"
#include "engine/single_sequence_forward.h"
#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "lumen/engine.h"
#include "model/kv_cache.h"
#include "sampling/sampler.h"

namespace lumen::testing {

// LUMEN_ENGINE_TEST_MODEL runs them on another model: a small `lumen synth` file (with the default
// model's vocabulary) where the backend is slow, as the simulated CUDA device is (sim_engine_tests).
inline std::string model_path() {
  const char* path = std::getenv("LUMEN_ENGINE_TEST_MODEL");
  return path != nullptr && *path != '\0' ? std::string(path) : default_model_path();
}

inline constexpr const char* kText =
    "The lighthouse keeper climbed the spiral stairs every evening, counting the steps as his "
    "father had taught him. Two hundred and twelve. At the top the lamp waited, its brass "
    "fittings green with salt, and beyond the glass the sea moved like a slow animal. Ships "
    "passed less often now; most carried their own light and needed his no longer. Still he "
    "wound the clockwork, trimmed the wick and wrote in the log: wind from the north-west, "
    "visibility fair, nothing to report. In the spring a letter came from the ministry. The "
    "light would be automated within the year. He read it twice, folded it into the log book "
    "and went up the stairs as usual. def fibonacci(n):\n    a, b = 0, 1\n    for _ in "
    "range(n):\n        a, b = b, a + b\n    return a\n";

struct Case {
  std::vector<int32_t> prompt;
  int64_t max_tokens;
};

class EngineModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(std::filesystem::exists(model_path())) << model_path() << " is missing";
    backend_ = make_engine_test_backend();
    if (backend_ == nullptr) return;  // no CUDA device: SetUp skips every test
    model_ = new engine::LoadedModel(engine::LoadedModel::load(model_path(), *backend_));
    // Three copies of the text: room for prompts of a few hundred tokens at any offset.
    const std::string text = std::string(kText) + kText + kText;
    text_tokens_ = new std::vector<int32_t>(model_->tokenizer.encode(text));
    ASSERT_GT(text_tokens_->size(), 400u);
  }
  void SetUp() override {
    if (backend_ == nullptr) GTEST_SKIP() << "no CUDA device";
  }
  // The loaded model as the public API's handle, for an Engine.
  static Model handle() { return engine::borrow_model(*model_, *backend_); }

  static void TearDownTestSuite() {
    delete text_tokens_;
    delete model_;
    delete backend_;
  }

  // Prompts cut from the text at different offsets and lengths (seeded), so some share
  // prefixes and some do not.
  static std::vector<Case> cases(size_t n, uint64_t seed, int64_t max_prompt, int64_t max_out) {
    std::mt19937_64 rng(seed);
    const auto& text = *text_tokens_;
    std::vector<Case> out;
    for (size_t i = 0; i < n; ++i) {
      const int64_t len = std::uniform_int_distribution<int64_t>(1, max_prompt)(rng);
      const int64_t offset = std::uniform_int_distribution<int64_t>(
          0, static_cast<int64_t>(text.size()) - len)(rng);
      std::vector<int32_t> prompt(text.begin() + offset, text.begin() + offset + len);
      out.push_back({std::move(prompt), std::uniform_int_distribution<int64_t>(1, max_out)(rng)});
    }
    return out;
  }

  // Greedy tokens of one request alone, through the single-sequence generator (an independent
  // path: one sequence, contiguous blocks, no scheduler).
  static std::vector<int32_t> alone(const Case& c) {
    engine::SingleSequenceForward gen(*model_, *backend_, 1024);
    std::vector<int32_t> out;
    std::span<const float> logits = gen.feed(c.prompt);
    for (int64_t i = 0; i < c.max_tokens; ++i) {
      int32_t token = sampling::argmax(logits);
      out.push_back(token);
      if (i + 1 < c.max_tokens) logits = gen.feed(std::span(&token, 1));
    }
    return out;
  }

  static SamplingParams greedy(int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }

  // Submits every case at once and steps the engine until all are done.
  static std::vector<std::vector<int32_t>> run_all(Engine& engine, const std::vector<Case>& cs) {
    std::vector<RequestHandle> handles;
    for (const Case& c : cs) handles.push_back(engine.add_request(c.prompt, greedy(c.max_tokens)));
    while (engine.has_unfinished()) engine.step();
    std::vector<std::vector<int32_t>> outputs;
    StreamChunk chunk;
    for (RequestHandle& h : handles) {
      outputs.emplace_back();
      while (h.next(chunk)) {
        for (const GeneratedToken& t : chunk.tokens) outputs.back().push_back(t.token);
        if (chunk.finished) {
          EXPECT_EQ(chunk.finish_reason, FinishReason::Length);
        }
      }
    }
    return outputs;
  }

  static EngineConfig config(int64_t kv_blocks, int64_t batched_tokens = 512) {
    EngineConfig c;
    c.kv_cache_bytes = kv_blocks * static_cast<int64_t>(model::KvCache::bytes_per_block(
                                       model_->hparams, c.block_size));
    c.max_num_batched_tokens = batched_tokens;
    return c;
  }

  static inline backend::Backend* backend_ = nullptr;
  static inline engine::LoadedModel* model_ = nullptr;
  static inline std::vector<int32_t>* text_tokens_ = nullptr;
};

}  // namespace lumen::testing
