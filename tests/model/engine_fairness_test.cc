// Fairness between clients on the real default model (issue 47, item 6): one client flooding
// the engine's seats, and one long prompt ahead of short ones. Each test performs the attack
// and asserts the bound in engine steps (deterministic), and prints the wall times it measured.
#include <chrono>
#include <cstdio>

#include "engine_fixture.h"

namespace lumen::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class EngineFairnessTest : public EngineModelTest {
 protected:
  std::vector<int32_t> prompt(size_t offset, size_t len) const {
    std::vector<int32_t> out;
    while (out.size() < len) {
      const auto& text = *text_tokens_;
      out.push_back(text[(offset + out.size()) % text.size()]);
    }
    return out;
  }
  static SamplingParams sampled(int64_t max_tokens, int32_t n) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.seed = 1;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    p.n = n;
    return p;
  }
  // Steps `engine` until `victim` has finished, at most `max_steps` steps; the steps taken
  // (max_steps + 1 when it did not finish) and the chunks it read.
  static int steps_until_done(Engine& engine, RequestHandle& victim, int max_steps, std::vector<StreamChunk>& read) {
    for (int steps = 1; steps <= max_steps; ++steps) {
      engine.step();
      StreamChunk chunk;
      while (victim.try_next(chunk)) {
        read.push_back(chunk);
        if (chunk.finished) return steps;
      }
    }
    return max_steps + 1;
  }
  // Submits the flood: 30 requests x n = 16 from `client` (480 sequences, all within one
  // client's 512 admission places in the server), and steps until they hold every seat.
  void flood(Engine& engine, uint64_t client) {
    for (size_t i = 0; i < 30; ++i) engine.add_request_n(prompt(i * 7, 24), sampled(64, 16), 0, 0, client);
    for (int i = 0; i < 8 && engine.stats().running < 64; ++i) engine.step();
    ASSERT_EQ(engine.stats().running, 64);
    ASSERT_GT(engine.stats().waiting, 0);
  }
};

TEST_F(EngineFairnessTest, AnotherClientsShortRequestIsAnsweredWhileOneClientHoldsEverySeat) {
  Engine engine(handle(), config(1024));
  ASSERT_EQ(engine.config().max_num_seqs, 64);
  ASSERT_NO_FATAL_FAILURE(flood(engine, /*client=*/1));
  const auto submitted = Clock::now();
  RequestHandle other = engine.add_request(prompt(100, 8), sampled(4, 1), 0, 0, /*client=*/2);
  std::vector<StreamChunk> read;
  const int steps = steps_until_done(engine, other, 40, read);
  const double took = seconds_since(submitted);
  std::printf("another client's 4-token request beside a flood of 480 sequences: %d steps, %.2f s\n", steps, took);
  // Bound: one step to take a seat from the flood (preemption) and prefill, one per token after.
  EXPECT_LE(steps, 4);
  ASSERT_FALSE(read.empty());
  EXPECT_EQ(read.back().finish_reason, FinishReason::Length);
  size_t tokens = 0;
  for (const StreamChunk& c : read) tokens += c.tokens.size();
  EXPECT_EQ(tokens, 4u);
  // The flood keeps the other 63 seats: it is not starved in turn.
  EXPECT_EQ(engine.stats().running, 63);
}

TEST_F(EngineFairnessTest, WithoutAClientKeyTheSameRequestWaitsBehindTheFlood) {
  // The control: the same request from the same client (what every request was before the
  // server said who asks) queues behind the 416 sequences ahead of it.
  Engine engine(handle(), config(1024));
  ASSERT_NO_FATAL_FAILURE(flood(engine, /*client=*/1));
  RequestHandle same = engine.add_request(prompt(100, 8), sampled(4, 1), 0, 0, /*client=*/1);
  std::vector<StreamChunk> read;
  EXPECT_GT(steps_until_done(engine, same, 20, read), 20);
}

TEST_F(EngineFairnessTest, AShortPromptBehindALongPrefillGetsItsFirstTokenInTheNextStep) {
  Engine engine(handle(), config(1024));
  const int64_t budget = engine.config().max_num_batched_tokens;
  RequestHandle long_one = engine.add_request(prompt(0, 3000), sampled(1, 1), 0, 0, /*client=*/1);
  const auto long_submitted = Clock::now();
  engine.step();  // the long prefill has begun
  const auto submitted = Clock::now();
  RequestHandle short_one = engine.add_request(prompt(50, 20), sampled(4, 1), 0, 0, /*client=*/2);
  StreamChunk chunk;
  int steps = 0;
  double ttft = 0;
  while (steps < 20) {
    engine.step();
    ++steps;
    if (short_one.try_next(chunk) && !chunk.tokens.empty()) {
      ttft = seconds_since(submitted);
      break;
    }
  }
  EXPECT_EQ(steps, 1);
  // The long one is still in prefill (3000 tokens take 6 steps of 512 alone) and goes on at at
  // least half the budget per step: its prefill ends within 2 x 3000 / budget steps of starting.
  EXPECT_FALSE(long_one.try_next(chunk) && !chunk.tokens.empty());
  int long_steps = 1 + steps;
  bool long_done = false;
  while (!long_done && long_steps < 2 * 3000 / budget + 2) {
    engine.step();
    ++long_steps;
    while (long_one.try_next(chunk)) long_done = long_done || !chunk.tokens.empty();
  }
  const double long_ttft = seconds_since(long_submitted);
  EXPECT_TRUE(long_done);
  std::printf("short prompt's TTFT behind a 3000-token prompt: %.2f s (1 step); the long one's: %.2f s (%d steps)\n",
              ttft, long_ttft, long_steps);
  while (engine.has_unfinished()) engine.step();
}

}  // namespace
}  // namespace lumen::testing
