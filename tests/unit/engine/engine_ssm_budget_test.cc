// A state-space model's recurrent states come out of the memory budget the KV cache is sized
// by: however large max_num_seqs, the engine holds no more state slots than the budget pays
// for (so a state model cannot oversubscribe memory), runs the requests beyond them as they
// free, and refuses, with a sentence, a budget that does not hold one sequence's state.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lumen/engine.h"
#include "ssm_engine.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

using EngineSsmBudget = SsmEngineTest;

// A fixed KV of 128 blocks and room for 3 states and a half: 3 slots, whatever max_num_seqs
// asks for; 6 requests still all finish, at most 3 at a time, each as it would alone.
TEST_F(EngineSsmBudget, FixedKvLeavesTheRestToStates) {
  EngineConfig c = config(128);
  c.max_num_seqs = 64;
  c.kv_cache_bytes = 128 * block_bytes() + 3 * slot_bytes() + slot_bytes() / 2;
  Engine engine(handle(), c);
  EXPECT_EQ(engine.stats().state_slots_total, 3);
  EXPECT_EQ(engine.stats().state_cache_bytes, 3u * static_cast<size_t>(slot_bytes()));
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(prompt(6 + 5 * i, 20 + i));
    handles.push_back(engine.add_request(prompts.back(), greedy(8)));
  }
  int64_t most_running = 0;
  while (engine.has_unfinished()) {
    engine.step();
    most_running = std::max(most_running, engine.stats().running);
  }
  EXPECT_EQ(most_running, 3) << "more sequences ran than there are state slots, or they never shared steps";
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(handles[i].collect().tokens, alone(prompts[i], 8));
}

// A budget-sized KV: the states and the KV together stay within the budget, for a budget that
// holds all of max_num_seqs and for one that holds a few sequences only.
TEST_F(EngineSsmBudget, StatesAndKvShareTheBudget) {
  for (const int64_t budget : {int64_t{64} << 20, 5 * slot_bytes()}) {
    EngineConfig c;
    c.block_size = 8;
    c.max_num_seqs = 16;
    c.max_model_len = 512;
    c.kv_cache_bytes = budget;
    Engine engine(handle(), c);
    const EngineStats s = engine.stats();
    EXPECT_GE(s.state_slots_total, 1);
    EXPECT_LE(s.state_slots_total, 16);
    EXPECT_LE(static_cast<int64_t>(s.state_cache_bytes + s.kv_cache_bytes), budget) << "budget " << budget;
    if (budget > 16 * slot_bytes() * 2) {
      EXPECT_EQ(s.state_slots_total, 16) << "a large budget held fewer slots";
    }
    if (budget < 16 * slot_bytes()) {
      EXPECT_LT(s.state_slots_total, 5) << "a small budget held more states than fit";
    }
    RequestHandle h = engine.add_request(prompt(30, 3), greedy(6));
    while (engine.has_unfinished()) engine.step();
    EXPECT_EQ(h.collect().tokens, alone(prompt(30, 3), 6));
  }
}

TEST_F(EngineSsmBudget, ABudgetWithoutRoomForOneStateIsRefused) {
  EngineConfig budget_sized;
  budget_sized.block_size = 8;
  budget_sized.kv_cache_bytes = slot_bytes() / 2;
  EngineConfig fixed_kv = config(64);
  fixed_kv.kv_cache_bytes = 64 * block_bytes() + slot_bytes() - 1;
  for (const EngineConfig& c : {budget_sized, fixed_kv}) {
    try {
      Engine engine(handle(), c);
      FAIL() << "an engine was built with no room for a recurrent state (budget " << c.kv_cache_bytes << ")";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("recurrent state"), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(slot_bytes())), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace lumen::testing
