// Gemma 3's sliding-window layers in the paged cache, on the real model: the local layers hold
// only their window's blocks (counted after every step), the output is the same token for token
// as a cache that keeps everything and as the single-sequence reference, and the prefix cache
// still finds a long prompt whose early local blocks were dropped.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "default_model_path.h"
#include "engine/engine_test_access.h"
#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "engine/single_sequence_forward.h"
#include "kv/kv_layout.h"
#include "lumen/engine.h"
#include "model/kv_cache.h"
#include "sampling/sampler.h"
#include "unit/engine/oracle_tree_proposer.h"

namespace lumen::testing {
namespace {

constexpr const char* kParagraph =
    "The lighthouse keeper climbed the spiral stairs every evening, counting the steps as his "
    "father had taught him. At the top the lamp waited, its brass fittings green with salt, and "
    "beyond the glass the sea moved like a slow animal. Ships passed less often now. ";

class SlidingWindowTest : public ::testing::Test {
 protected:
  static std::string path() { return model_cache_dir() + "/gemma-3-270m-q4_k_m.gguf"; }

  static void SetUpTestSuite() {
    ASSERT_TRUE(std::filesystem::exists(path())) << path() << " is missing";
    backend_ = new backend::CpuBackend(2);
    model_ = new engine::LoadedModel(engine::LoadedModel::load(path(), *backend_));
    // Numbered sentences: a prompt well past the 512-token window that does not repeat itself.
    std::string text;
    for (int i = 0; text.size() < 5000; ++i) text += "Entry " + std::to_string(i) + ". " + kParagraph;
    prompt_ = new std::vector<int32_t>(model_->tokenizer.encode(text, {.add_special = true}));
    ASSERT_GT(prompt_->size(), 1000u);
  }
  static void TearDownTestSuite() {
    delete prompt_;
    delete model_;
    delete backend_;
  }

  static EngineConfig config(bool free_out_of_window, int64_t chunk) {
    EngineConfig c;
    c.max_model_len = 2048;
    c.kv_cache_full_sequences = 2;
    c.max_num_batched_tokens = chunk;
    c.free_out_of_window_kv = free_out_of_window;
    return c;
  }

  static SamplingParams greedy(int64_t n) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = n;
    p.ignore_eos = true;
    return p;
  }

  // Blocks one sequence of n computed positions holds: all of them in the global group, the
  // window's in each local group.
  static int64_t expected_blocks(const kv::KvLayout& layout, int64_t n, int64_t block_size) {
    const int64_t blocks = (n + block_size - 1) / block_size;
    int64_t total = 0;
    for (const kv::KvGroup& g : layout.groups) total += blocks - kv::first_block_in_window(n, g.window, block_size);
    return total;
  }

  // Greedy tokens through the engine; after every step, the blocks in use against `expected`.
  static std::vector<int32_t> generate(Engine& engine, int64_t n, const kv::KvLayout* layout) {
    RequestHandle handle = engine.add_request(*prompt_, greedy(n));
    std::vector<int32_t> out;
    StreamChunk chunk;
    while (engine.has_unfinished()) {
      engine.step();
      const EngineStats s = engine.stats();
      if (layout != nullptr && s.running == 1) {
        // A fresh engine, one request: every token run is a computed position.
        const auto computed = static_cast<int64_t>(s.computed_tokens);
        EXPECT_EQ(s.kv_blocks_used, expected_blocks(*layout, computed, 16)) << "at " << computed << " positions";
      }
      while (handle.try_next(chunk)) {
        for (const GeneratedToken& t : chunk.tokens) out.push_back(t.token);
      }
    }
    while (handle.try_next(chunk)) {
      for (const GeneratedToken& t : chunk.tokens) out.push_back(t.token);
    }
    return out;
  }

  // Greedy tokens with each one's log-probability (and the top 2 others').
  static GenerationResult with_logprobs(Engine& engine, int64_t n) {
    SamplingParams p = greedy(n);
    p.logprobs = 2;
    RequestHandle handle = engine.add_request(*prompt_, p);
    while (engine.has_unfinished()) engine.step();
    return handle.collect();
  }

  static inline backend::CpuBackend* backend_ = nullptr;
  static inline engine::LoadedModel* model_ = nullptr;
  static inline std::vector<int32_t>* prompt_ = nullptr;
};

TEST_F(SlidingWindowTest, LocalLayersHoldTheirWindowAndOutputIsUnchanged) {
  const kv::KvLayout layout = kv::make_kv_layout(model_->transformer->layer_windows(), true);
  ASSERT_EQ(layout.n_groups(), 6u);  // 3 global layers, 15 local ones in 5 groups of 3
  constexpr int64_t kTokens = 48;

  // 128-token chunks: local blocks are dropped between the chunks of the prompt too.
  Engine windowed(engine::borrow_model(*model_, *backend_), config(true, 128));
  const std::vector<int32_t> with_windows = generate(windowed, kTokens, &layout);
  EXPECT_EQ(windowed.stats().kv_blocks_used, 0);

  Engine keep_all(engine::borrow_model(*model_, *backend_), config(false, 512));
  const std::vector<int32_t> kept = generate(keep_all, kTokens, nullptr);
  ASSERT_EQ(with_windows.size(), static_cast<size_t>(kTokens));
  EXPECT_EQ(with_windows, kept);

  // The independent reference: one sequence, contiguous blocks, every position kept.
  engine::SingleSequenceForward alone(*model_, *backend_, 2048);
  std::vector<int32_t> reference;
  std::span<const float> logits = alone.feed(*prompt_);
  for (int64_t i = 0; i < kTokens; ++i) {
    int32_t token = sampling::argmax(logits);
    reference.push_back(token);
    if (i + 1 < kTokens) logits = alone.feed(std::span(&token, 1));
  }
  EXPECT_EQ(with_windows, reference);

  // The same memory budget in bytes holds far more positions when local layers keep a window.
  const int64_t n = static_cast<int64_t>(prompt_->size()) + kTokens - 1;
  const size_t page = model::KvCache::bytes_per_page(model_->hparams, layout, 16);
  const size_t full_block = model::KvCache::bytes_per_block(model_->hparams, 16);
  const auto per_token = [n](int64_t blocks, size_t bytes) {
    return static_cast<double>(blocks) * static_cast<double>(bytes) / static_cast<double>(n);
  };
  const double windowed_bytes = per_token(expected_blocks(layout, n, 16), page);
  const double kept_bytes = per_token((n + 15) / 16, full_block);
  std::printf("KV bytes per token at %lld positions: %.0f with windows, %.0f keeping all (%.2fx)\n",
              static_cast<long long>(n), windowed_bytes, kept_bytes, kept_bytes / windowed_bytes);
  EXPECT_LT(windowed_bytes * 1.5, kept_bytes);  // 1.8x here; the ratio grows with the length
}

// A cache sized for one sequence of exactly the prompt and its answer (kv_cache_full_sequences,
// as `bench latency` and a single-user CLI size it) holds the prompt's whole prefill step too:
// a local layer keeps every position of that step's span, not just a window. Sized for decode
// steps alone, the pool took the request and then ended it with no tokens.
TEST_F(SlidingWindowTest, ACacheSizedForOneSequenceHoldsItsLongestPrefillStep) {
  constexpr int64_t kTokens = 16;
  Engine reference_engine(engine::borrow_model(*model_, *backend_), config(true, 512));
  const std::vector<int32_t> expected = generate(reference_engine, kTokens, nullptr);
  for (const int64_t chunk : {int64_t{512}, int64_t{2048}}) {
    EngineConfig c = config(true, chunk);
    c.max_model_len = static_cast<int64_t>(prompt_->size()) + kTokens;
    c.kv_cache_full_sequences = 1;
    Engine engine(engine::borrow_model(*model_, *backend_), c);
    EXPECT_EQ(generate(engine, kTokens, nullptr), expected) << "steps of up to " << chunk << " positions";
  }
}

TEST_F(SlidingWindowTest, PrefixCacheFindsALongPromptAgain) {
  Engine engine(engine::borrow_model(*model_, *backend_), config(true, 512));
  const std::vector<int32_t> first = generate(engine, 8, nullptr);
  const EngineStats before = engine.stats();
  const std::vector<int32_t> second = generate(engine, 8, nullptr);
  const EngineStats after = engine.stats();
  EXPECT_EQ(first, second);
  // Every whole block of the prompt but the last token's comes from the cache.
  const auto prompt_blocks = static_cast<uint64_t>((prompt_->size() - 1) / 16);
  EXPECT_EQ(after.prefix_hit_blocks - before.prefix_hit_blocks, prompt_blocks);
  EXPECT_EQ(after.computed_tokens - before.computed_tokens, prompt_->size() - prompt_blocks * 16 + 7);
}

TEST_F(SlidingWindowTest, ContextShiftNeedsEveryPositionKept) {
  EngineConfig c = config(true, 512);
  c.context_overflow = ContextOverflow::Shift;
  try {
    Engine engine(engine::borrow_model(*model_, *backend_), c);
    ADD_FAILURE() << "a context shift over dropped window blocks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keep-out-of-window-kv"), std::string::npos) << e.what();
  }
  c.free_out_of_window_kv = false;  // one group of every layer: each rotated with its own rope
  Engine engine(engine::borrow_model(*model_, *backend_), c);
  EXPECT_TRUE(engine.stats().kv_blocks_total > 0);
}

// Token trees (n-gram matches of every length; lookahead's pooled n-grams beside its window
// rows) on a model with sliding-window layers, the prompt well past the 512-token window: each
// row's window counts from its own position, not from where the tree put it in the cache, and
// the accepted branch's K/V moves in every layer group's blocks. Greedy output is the plain
// output with the windowed layout and with every position kept.
TEST_F(SlidingWindowTest, TokenTreesAndLookaheadKeepTheOutput) {
  constexpr int64_t kTokens = 32;
  Engine plain(engine::borrow_model(*model_, *backend_), config(true, 512));
  const std::vector<int32_t> expected = generate(plain, kTokens, nullptr);
  const GenerationResult plain_logprobs = with_logprobs(plain, kTokens);
  ASSERT_EQ(plain_logprobs.tokens, expected);
  for (const bool free_out_of_window : {true, false}) {
    for (const SpeculativeMethod method : {SpeculativeMethod::Ngram, SpeculativeMethod::Lookahead}) {
      SCOPED_TRACE(std::string(method == SpeculativeMethod::Ngram ? "ngram tree" : "lookahead tree") +
                   (free_out_of_window ? ", windowed layout" : ", every position kept"));
      EngineConfig c = config(free_out_of_window, 512);
      SpeculativeConfig& s = c.speculative;
      s.method = method;
      s.num_candidates = 3;
      s.min_acceptance_rate = 0.0;
      if (method == SpeculativeMethod::Ngram) {
        s.num_speculative_tokens = 4;
        s.prompt_lookup_min = 1;
        s.prompt_lookup_max = 3;
      } else {
        s.window_size = 3;
        s.ngram_size = 3;
      }
      Engine speculative(engine::borrow_model(*model_, *backend_), c);
      EXPECT_EQ(generate(speculative, kTokens, nullptr), expected);
      const EngineStats stats = speculative.stats();
      std::printf("%s: %llu drafts, %llu accepted, %llu off the first branch\n",
                  method == SpeculativeMethod::Ngram ? "ngram tree" : "lookahead tree",
                  static_cast<unsigned long long>(stats.spec_drafts),
                  static_cast<unsigned long long>(stats.spec_accepted_tokens),
                  static_cast<unsigned long long>(stats.spec_branch_tokens));
      EXPECT_GT(stats.spec_drafts, 0u);
      EXPECT_EQ(stats.kv_blocks_used, 0);
    }
    // Trees whose right continuation is usually the second branch (an oracle that knows the
    // output): the accepted branch's K/V moves on most steps, in every layer group's blocks.
    std::vector<std::vector<int32_t>> known = {*prompt_};
    known[0].insert(known[0].end(), expected.begin(), expected.end());
    EngineConfig c = config(free_out_of_window, 512);
    c.speculative.method = SpeculativeMethod::Ngram;
    c.speculative.num_speculative_tokens = 4;
    c.speculative.prompt_lookup_min = 1;
    c.speculative.prompt_lookup_max = 3;
    c.speculative.num_candidates = 3;
    c.speculative.min_acceptance_rate = 0.0;
    Engine oracle(engine::borrow_model(*model_, *backend_), c);
    engine::EngineTestAccess::set_proposer(oracle, std::make_unique<OracleTreeProposer>(known));
    // Log-probabilities bit for bit: a row of stale K/V in any layer would move them.
    const GenerationResult got = with_logprobs(oracle, kTokens);
    EXPECT_EQ(got.tokens, expected) << "oracle trees";
    EXPECT_EQ(got.logprobs, plain_logprobs.logprobs) << "oracle trees";
    EXPECT_GT(oracle.stats().spec_branch_tokens, 5u);
  }
}

}  // namespace
}  // namespace lumen::testing
