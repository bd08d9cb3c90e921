// Context shift and StreamingLLM on the real default model: generation runs far past the
// context in flat memory, the text stays coherent (a counting prompt keeps counting across many
// shifts), and beam search still finishes at the context.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "engine/context_shift.h"
#include "engine_fixture.h"

namespace lumen::testing {
namespace {

constexpr const char* kCounting = "Here is a list of the numbers from one to a thousand: 1, 2, 3, 4, 5,";
// The context of the shifting engines. Shifts happen the same way in any context a few blocks
// long; a short one keeps the generations that run several times past it short.
constexpr int64_t kContext = 128;

class ContextShiftTest : public EngineModelTest {
 protected:
  static EngineConfig shifting(ContextOverflow overflow, int64_t keep, int64_t window) {
    EngineConfig c;
    c.max_model_len = kContext;
    c.kv_cache_full_sequences = 1;
    c.context_overflow = overflow;
    c.context_keep_tokens = keep;
    c.kv_window_tokens = window;
    return c;
  }

  struct Result {
    std::vector<int32_t> tokens;
    FinishReason finish = FinishReason::Error;
    int64_t most_blocks = 0;
  };

  static Result generate(Engine& engine, const SamplingParams& params) {
    const std::vector<int32_t> prompt = model_->tokenizer.encode(kCounting);
    RequestHandle handle = engine.add_request(prompt, params);
    Result r;
    StreamChunk chunk;
    while (engine.has_unfinished()) {
      engine.step();
      r.most_blocks = std::max(r.most_blocks, engine.stats().kv_blocks_used);
    }
    while (handle.try_next(chunk)) {
      for (const GeneratedToken& t : chunk.tokens) r.tokens.push_back(t.token);
      if (chunk.finished) r.finish = chunk.finish_reason;
    }
    return r;
  }

  // The share of consecutive numbers in the text that go up by one (a model that lost its place,
  // keys at wrong positions, stops counting), and the highest number reached.
  static double counting_share(const std::string& text, int64_t& highest) {
    std::vector<int64_t> numbers;
    for (size_t i = 0; i < text.size();) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      int64_t n = 0;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) n = n * 10 + (text[i++] - '0');
      numbers.push_back(n);
    }
    if (numbers.size() < 2) return 0.0;
    size_t up = 0;
    for (size_t i = 1; i < numbers.size(); ++i) up += numbers[i] == numbers[i - 1] + 1;
    highest = *std::max_element(numbers.begin(), numbers.end());
    return static_cast<double>(up) / static_cast<double>(numbers.size() - 1);
  }
};

TEST_F(ContextShiftTest, StreamingLlmGeneratesFourTimesTheContextInFlatMemory) {
  Engine engine(handle(), shifting(ContextOverflow::Finish, 4, 64));
  const Result r = generate(engine, greedy(4 * kContext));
  ASSERT_EQ(r.finish, FinishReason::Length);
  ASSERT_EQ(r.tokens.size(), 512u);
  // The sinks' block, the window and the block being filled, never more.
  EXPECT_LE(r.most_blocks, (16 + 64 + 16) / 16);
  EXPECT_GE(engine.stats().context_shifts, (512u - 96u) / 16u);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  int64_t last = 0;
  const std::string text = model_->tokenizer.decode(r.tokens);
  const double share = counting_share(text, last);
  std::printf("counted to %lld, %.1f%% of steps up by one, %llu shifts\n", static_cast<long long>(last),
              100.0 * share, static_cast<unsigned long long>(engine.stats().context_shifts));
  EXPECT_GT(share, 0.9) << text;
  EXPECT_GT(last, 100) << text;  // 512 tokens of ", n": far past the dozen numbers the window holds
}

TEST_F(ContextShiftTest, ShiftGoesOnPastTheContextAndKeepsTheStart) {
  Engine engine(handle(), shifting(ContextOverflow::Shift, 32, 0));
  const Result r = generate(engine, greedy(350));
  ASSERT_EQ(r.finish, FinishReason::Length);
  ASSERT_EQ(r.tokens.size(), 350u);
  EXPECT_LE(r.most_blocks, kContext / 16 + 1);
  EXPECT_GE(engine.stats().context_shifts, 3u);
  int64_t last = 0;
  const std::string text = model_->tokenizer.decode(r.tokens);
  const double share = counting_share(text, last);
  std::printf("counted to %lld, %.1f%% of steps up by one, %llu shifts\n", static_cast<long long>(last),
              100.0 * share, static_cast<unsigned long long>(engine.stats().context_shifts));
  EXPECT_GT(share, 0.9) << text;
  EXPECT_GT(last, 75) << text;
}

TEST_F(ContextShiftTest, WithoutShiftingTheContextEndsTheRequest) {
  Engine engine(handle(), shifting(ContextOverflow::Finish, 0, 0));
  const Result r = generate(engine, greedy(350));
  EXPECT_EQ(r.finish, FinishReason::Length);
  EXPECT_LT(r.tokens.size(), static_cast<size_t>(kContext));
  EXPECT_EQ(engine.stats().context_shifts, 0u);
}

TEST_F(ContextShiftTest, BeamSearchFinishesAtTheContextEvenWhenShifting) {
  Engine engine(handle(), [] {
    EngineConfig c = shifting(ContextOverflow::Shift, 0, 0);
    c.max_model_len = 96;
    c.kv_cache_full_sequences = 4;
    return c;
  }());
  SamplingParams p = greedy(500);
  p.use_beam_search = true;
  p.best_of = 2;
  const Result r = generate(engine, p);
  EXPECT_EQ(r.finish, FinishReason::Length);
  EXPECT_LT(r.tokens.size(), 96u);
  EXPECT_EQ(engine.stats().context_shifts, 0u);
}

TEST_F(ContextShiftTest, ImpossiblePoliciesAreRefused) {
  EXPECT_THROW(Engine(handle(), shifting(ContextOverflow::Shift, kContext - 8, 0)), Error);  // keeps the whole context
  EXPECT_THROW(Engine(handle(), shifting(ContextOverflow::Finish, 4, 8)), Error);    // window under a block
  EXPECT_THROW(Engine(handle(), shifting(ContextOverflow::Finish, 64, 200)), Error);  // more than the context
}

}  // namespace
}  // namespace lumen::testing
