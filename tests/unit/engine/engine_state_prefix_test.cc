// The state prefix cache (engine/state_snapshots.h) on Mamba 2, the granite-hybrid and RWKV 7: a prompt
// snapshots its state where a prefill chunk ends a full block, and a later prompt with the same
// prefix starts from the deepest snapshot (the hybrid also adopts the attention layer's cached
// K/V for that prefix) and prefills only the rest. A hit must change nothing: the greedy tokens
// equal the bare forward pass alone, and the logprobs those of an engine without the cache.
// Prompts are no multiple of the block size (8) and longer than a step's token budget (24), so
// they prefill in chunks.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "lumen/engine.h"
#include "state_prefix_engine.h"

namespace lumen::testing {
namespace {

class StatePrefix : public StatePrefixEngineTest {
 protected:
  static void expect_same_logprobs(const GenerationResult& got, const GenerationResult& want) {
    ASSERT_EQ(got.logprobs.size(), want.logprobs.size());
    for (size_t i = 0; i < got.logprobs.size(); ++i) {
      // Another chunking of the same tokens rounds differently in the last bits, no more.
      EXPECT_NEAR(got.logprobs[i], want.logprobs[i], 1e-3) << "token " << i;
    }
  }

  static void a_hit_changes_no_output() {
    const std::vector<int32_t> first = prompt(43, 3);
    std::vector<int32_t> second(first.begin(), first.begin() + 37);  // shares 4 blocks and 5 tokens
    for (int32_t t : prompt(6, 9)) second.push_back(t);
    Engine cold(handle(), config(128));  // no state prefix cache
    const GenerationResult second_cold = run_alone(cold, second, 12);

    Engine engine(handle(), snapshot_config(128, 8));
    const GenerationResult first_done = run_alone(engine, first, 12);
    EXPECT_EQ(first_done.tokens, alone(first, 12));
    EngineStats s = engine.stats();
    EXPECT_EQ(s.state_prefix_hits, 0u);
    // Chunks end at 24 (the token budget) and 40 (cut to end the prompt's last full block).
    EXPECT_EQ(s.state_snapshots_used, 2);
    EXPECT_EQ(s.state_snapshots_total, 8);
    EXPECT_GE(s.state_snapshot_bytes, static_cast<size_t>(8 * slot_bytes()));

    // The deepest snapshot within the shared 32 tokens is the one at 24.
    const GenerationResult second_hit = run_alone(engine, second, 12);
    s = engine.stats();
    EXPECT_EQ(s.state_prefix_hits, 1u);
    EXPECT_EQ(s.state_prefix_hit_tokens, 24u);
    EXPECT_EQ(second_hit.tokens, alone(second, 12));
    EXPECT_EQ(second_hit.tokens, second_cold.tokens);
    expect_same_logprobs(second_hit, second_cold);

    // The same prompt again starts at 40, its last full block.
    const GenerationResult first_again = run_alone(engine, first, 12);
    s = engine.stats();
    EXPECT_EQ(s.state_prefix_hits, 2u);
    EXPECT_EQ(s.state_prefix_hit_tokens, 24u + 40u);
    EXPECT_EQ(first_again.tokens, first_done.tokens);
    expect_same_logprobs(first_again, first_done);
    expect_nothing_held(engine);
  }

  // More prompts than snapshots: the oldest go, the cache stays within its entries, and every
  // answer is still the one alone.
  static void a_full_cache_evicts() {
    Engine engine(handle(), snapshot_config(128, 3));
    for (int i = 0; i < 4; ++i) {
      const std::vector<int32_t> p = prompt(21, 20 + i);
      EXPECT_EQ(run_alone(engine, p, 4).tokens, alone(p, 4)) << "prompt " << i;
    }
    const EngineStats s = engine.stats();
    EXPECT_EQ(s.state_snapshots_used, 3);
    const std::vector<int32_t> last = prompt(21, 23);
    EXPECT_EQ(run_alone(engine, last, 4).tokens, alone(last, 4));
    EXPECT_EQ(engine.stats().state_prefix_hits, s.state_prefix_hits + 1);
    expect_nothing_held(engine);
  }
};

class EngineSsmStatePrefix : public StatePrefix {};

class EngineHybridStatePrefix : public StatePrefix {
 protected:
  static void SetUpTestSuite() { set_up_state_model("granite-hybrid-mini"); }
};

// RWKV 7's state (token shifts and wkv matrices) is as opaque to the snapshots as Mamba's.
class EngineRwkv7StatePrefix : public StatePrefix {
 protected:
  static void SetUpTestSuite() { set_up_state_model("rwkv7-mini"); }
};

TEST_F(EngineSsmStatePrefix, AHitChangesNoOutput) { a_hit_changes_no_output(); }
TEST_F(EngineHybridStatePrefix, AHitChangesNoOutput) { a_hit_changes_no_output(); }
TEST_F(EngineRwkv7StatePrefix, AHitChangesNoOutput) { a_hit_changes_no_output(); }
TEST_F(EngineSsmStatePrefix, AFullCacheEvictsTheOldest) { a_full_cache_evicts(); }
TEST_F(EngineHybridStatePrefix, AFullCacheEvictsTheOldest) { a_full_cache_evicts(); }

// The snapshots come out of the cache memory budget: with the KV sized by the budget, the same
// budget with room set aside for 6 snapshots holds fewer blocks, and the states, snapshots and
// K/V together stay within it.
TEST_F(EngineSsmStatePrefix, SnapshotsComeOutOfTheMemoryBudget) {
  auto sized = [](int64_t snapshots) {
    EngineConfig c;
    c.block_size = 8;
    c.max_num_seqs = 64;  // more than the budget holds: the budget, not the sequences, sizes the KV
    c.kv_cache_bytes = 40 * slot_bytes();
    c.state_prefix_cache_bytes = snapshots * slot_bytes();
    return c;
  };
  Engine plain(handle(), sized(0));
  Engine cached(handle(), sized(6));
  const EngineStats p = plain.stats(), s = cached.stats();
  EXPECT_EQ(s.state_snapshots_total, 6);
  EXPECT_EQ(p.state_snapshots_total, 0);
  EXPECT_LT(s.kv_blocks_total, p.kv_blocks_total);
  EXPECT_LE(s.state_slots_total, p.state_slots_total);
  EXPECT_LE(s.state_cache_bytes + s.kv_cache_bytes + 6 * static_cast<size_t>(slot_bytes()),
            static_cast<size_t>(40 * slot_bytes()));
}

// A budget too small for one snapshot is refused with a sentence.
TEST_F(EngineSsmStatePrefix, ACacheTooSmallForOneSnapshotIsRefused) {
  EngineConfig c = config(128);
  c.state_prefix_cache_bytes = slot_bytes() - 1;
  try {
    Engine engine(handle(), c);
    FAIL() << "an engine was built with a state prefix cache that holds no snapshot";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no snapshot"), std::string::npos) << e.what();
  }
}

// Without prefix caching a snapshot could never be adopted (a hit adopts the prefix's blocks
// too): asking for both is refused, not silently ignored.
TEST_F(EngineSsmStatePrefix, WithoutPrefixCachingItIsRefused) {
  EngineConfig c = snapshot_config(128, 2);
  c.enable_prefix_caching = false;
  try {
    Engine engine(handle(), c);
    FAIL() << "an engine was built with a state prefix cache and no prefix caching";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("with prefix caching on"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::testing
