#pragma once
// What the state prefix cache and state swap tests share (engine_state_prefix_test.cc,
// engine_state_swap_test.cc): engine configs with room for state snapshots beside the KV and
// the slots, a request run to its end, and the accounting a drained engine must return to.
#include <gtest/gtest.h>

#include <vector>

#include "ssm_engine.h"

namespace lumen::testing {

class StatePrefixEngineTest : public SsmEngineTest {
 protected:
  // config(kv_blocks), with `n` snapshots' bytes more in the budget, all for the state prefix cache.
  static EngineConfig snapshot_config(int64_t kv_blocks, int64_t n) {
    EngineConfig c = config(kv_blocks);
    c.state_prefix_cache_bytes = n * slot_bytes();
    c.kv_cache_bytes += c.state_prefix_cache_bytes;
    return c;
  }
  static GenerationResult run_alone(Engine& engine, const std::vector<int32_t>& prompt, int64_t n) {
    SamplingParams p = greedy(n);
    p.logprobs = 0;
    RequestHandle h = engine.add_request(prompt, p);
    drain(engine);
    return h.collect();
  }
  // Nothing is held once every request ended: no state slot, swap slot or referenced block.
  static void expect_nothing_held(const Engine& engine) {
    const EngineStats s = engine.stats();
    EXPECT_EQ(s.state_slots_used, 0);
    EXPECT_EQ(s.state_swap_slots_used, 0);
    EXPECT_EQ(s.kv_blocks_used, 0);
    EXPECT_LE(s.state_snapshots_used, s.state_snapshots_total);
  }
};

}  // namespace lumen::testing
