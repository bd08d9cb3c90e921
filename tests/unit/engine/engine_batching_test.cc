// Greedy determinism, batch invariance and abort on the synthetic model.
#include "synth_engine.h"

namespace lumen::testing {
namespace {

using EngineBatching = SynthEngineTest;

// The same prompt alone and among several others yields the same greedy tokens: batching
// (and the other sequences' K/V in the pool) must not leak into a sequence's attention.
TEST_F(EngineBatching, GreedyIsBatchInvariant) {
  Engine alone(handle(), config(256));
  RequestHandle h = alone.add_request(prompt(9, 1), greedy(12));
  drain(alone);
  std::vector<int32_t> expected = tokens(h);
  ASSERT_EQ(expected.size(), 12u);

  Engine batched(handle(), config(256));
  std::vector<RequestHandle> hs;
  for (int s = 0; s < 4; ++s) hs.push_back(batched.add_request(prompt(5 + 3 * s, 10 + s), greedy(8 + s)));
  RequestHandle same = batched.add_request(prompt(9, 1), greedy(12));
  drain(batched);
  EXPECT_EQ(tokens(same), expected);
  for (RequestHandle& o : hs) EXPECT_FALSE(tokens(o).empty());
}

// An aborted request ends with Abort, gives its blocks back, and leaves the others' tokens as
// they would have been without it.
TEST_F(EngineBatching, AbortFreesBlocksAndLeavesOthersAlone) {
  Engine reference(handle(), config(256));
  RequestHandle ref = reference.add_request(prompt(7, 2), greedy(10));
  drain(reference);
  std::vector<int32_t> expected = tokens(ref);

  EngineConfig c = config(256);
  c.enable_prefix_caching = false;  // cached blocks would stay "used" after the request ends
  Engine engine(handle(), c);
  ASSERT_EQ(engine.stats().kv_blocks_used, 0);
  RequestHandle victim = engine.add_request(prompt(11, 3), greedy(50));
  RequestHandle other = engine.add_request(prompt(7, 2), greedy(10));
  for (int i = 0; i < 3; ++i) engine.step();
  EXPECT_GT(engine.stats().kv_blocks_used, 0);
  engine.abort(victim.id());
  drain(engine);
  FinishReason reason = FinishReason::Stop;
  std::vector<int32_t> cut = tokens(victim, &reason);
  EXPECT_EQ(reason, FinishReason::Abort);
  EXPECT_LT(cut.size(), 50u);
  EXPECT_EQ(tokens(other), expected);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
  EXPECT_EQ(engine.stats().running, 0);
}

}  // namespace
}  // namespace lumen::testing
