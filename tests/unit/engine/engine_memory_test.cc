// KV-cache pressure on the synthetic model: preemption (recompute and swap), prefix-cache
// reuse and cache salts, priority scheduling.
#include <chrono>
#include <future>

#include "synth_engine.h"

namespace lumen::testing {
namespace {

class EngineMemory : public SynthEngineTest {
 protected:
  static std::vector<std::vector<int32_t>> run(Engine& engine);
};

// Four requests needing 7 blocks each (block size 4) at their longest.
std::vector<std::vector<int32_t>> EngineMemory::run(Engine& engine) {
  std::vector<RequestHandle> hs;
  for (int s = 0; s < 4; ++s) {
    hs.push_back(engine.add_request(prompt(6 + s, 20 + s), greedy(20)));
  }
  while (engine.has_unfinished()) engine.step();
  std::vector<std::vector<int32_t>> out;
  for (RequestHandle& h : hs) {
    GenerationResult r = h.collect();
    EXPECT_EQ(r.finish, FinishReason::Length);
    out.push_back(r.tokens);
  }
  return out;
}

// With room for about two of the four at once, both preemption modes finish every request
// with the tokens of an unconstrained run, and actually preempted.
TEST_F(EngineMemory, PreemptionByRecomputeAndBySwapKeepsTheTokens) {
  Engine roomy(handle(), config(256));
  std::vector<std::vector<int32_t>> expected = run(roomy);
  EXPECT_EQ(roomy.stats().preemptions, 0u);

  for (PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    SCOPED_TRACE(mode == PreemptionMode::Swap ? "swap" : "recompute");
    EngineConfig c = config(16);
    c.preemption_mode = mode;
    c.enable_prefix_caching = false;  // recompute from scratch, not from the cache
    Engine tight(handle(), c);
    EXPECT_EQ(run(tight), expected);
    EXPECT_GT(tight.stats().preemptions, 0u);
    if (mode == PreemptionMode::Swap) {
      EXPECT_GT(tight.stats().swapped_out_blocks, 0u);
    }
    EXPECT_EQ(tight.stats().kv_blocks_used, 0);
  }
}

// A prompt as long as the pool allows (8 blocks of 4: max_model_len 32, a 31-token prompt whose
// one prefill chunk needs every block) runs once nothing else does: admission's watermark keeps
// blocks free for running sequences to grow into, and with none running it kept this request
// waiting for blocks that never came, stepping forever (and every request behind it with it).
// A shorter request ahead of it runs first; the long one follows when the pool empties.
TEST_F(EngineMemory, APromptNeedingThePoolRunsOnceNothingElseDoes) {
  Engine engine(handle(), config(8));
  ASSERT_EQ(engine.stats().max_model_len, 32);
  RequestHandle first = engine.add_request(prompt(10, 1), greedy(5));
  RequestHandle whole = engine.add_request(prompt(31, 2), greedy(1));
  for (int steps = 0; engine.has_unfinished(); ++steps) {
    ASSERT_LT(steps, 100) << "the engine stopped making progress";
    engine.step();
  }
  EXPECT_EQ(first.collect().tokens.size(), 5u);
  const GenerationResult r = whole.collect();
  EXPECT_EQ(r.tokens.size(), 1u);
  EXPECT_EQ(r.finish, FinishReason::Length);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

// A second request with the same 32-token prompt reuses its cached blocks (and gets the same
// tokens); under another cache salt it reuses none.
TEST_F(EngineMemory, PrefixCacheHitsOnlyWithinASalt) {
  Engine engine(handle(), config(256));
  auto once = [&](uint64_t salt) {
    RequestHandle h = engine.add_request(prompt(32, 8), greedy(5), 0, salt);
    drain(engine);
    return tokens(h);
  };
  std::vector<int32_t> first = once(1);
  const uint64_t hits0 = engine.stats().prefix_hit_blocks;
  EXPECT_EQ(once(1), first);
  const uint64_t hits1 = engine.stats().prefix_hit_blocks;
  EXPECT_GE(hits1 - hits0, 7u);  // 8 full blocks; the last may be recomputed for its logits
  EXPECT_EQ(once(2), first);
  EXPECT_EQ(engine.stats().prefix_hit_blocks, hits1);
}

// Under the priority policy, with one running slot, a later higher-priority request preempts
// the running one and finishes first; the preempted one still finishes with its own tokens.
TEST_F(EngineMemory, HigherPriorityArrivingLaterRunsFirst) {
  Engine reference(handle(), config(256));
  RequestHandle ref = reference.add_request(prompt(6, 9), greedy(30));
  drain(reference);
  std::vector<int32_t> expected = tokens(ref);

  EngineConfig c = config(256);
  c.policy = SchedulingPolicy::Priority;
  c.max_num_seqs = 1;
  Engine engine(handle(), c);
  RequestHandle low = engine.add_request(prompt(6, 9), greedy(30), /*priority=*/0);
  for (int i = 0; i < 3; ++i) engine.step();
  RequestHandle high = engine.add_request(prompt(5, 10), greedy(2), /*priority=*/5);
  auto high_done = std::async(std::launch::async, [&] { return high.collect(); });
  // Prefill (first token) and one decode: high is done, low is not.
  for (int i = 0; i < 2; ++i) engine.step();
  ASSERT_EQ(high_done.wait_for(std::chrono::seconds(2)), std::future_status::ready)
      << "the high-priority request was not scheduled ahead of the running one";
  EXPECT_EQ(high_done.get().tokens.size(), 2u);
  EXPECT_TRUE(engine.has_unfinished());
  EXPECT_GT(engine.stats().preemptions, 0u);
  drain(engine);
  EXPECT_EQ(tokens(low), expected);
}

}  // namespace
}  // namespace lumen::testing
