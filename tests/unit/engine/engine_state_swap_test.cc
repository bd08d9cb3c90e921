// Swap preemption of state models (Mamba 2 and the granite-hybrid): a preempted sequence's
// state slot goes to host swap space with its K/V blocks and comes back when it resumes, so
// its tokens are those of the bare forward pass alone. Forks (n > 1) and aborts beside
// preemption and the state prefix cache leave nothing held: no state slot, swap slot or block.
#include <gtest/gtest.h>

#include <vector>

#include "lumen/engine.h"
#include "state_prefix_engine.h"

namespace lumen::testing {
namespace {

class StateSwap : public StatePrefixEngineTest {
 protected:
  static EngineConfig swap_config(int64_t kv_blocks, int64_t snapshots) {
    EngineConfig c = snapshots > 0 ? snapshot_config(kv_blocks, snapshots) : config(kv_blocks);
    c.preemption_mode = PreemptionMode::Swap;
    c.swap_space_bytes = int64_t{64} << 20;
    return c;
  }

  static void swapped_sequences_keep_their_state() {
    std::vector<std::vector<int32_t>> prompts, expected;
    for (int i = 0; i < 4; ++i) {
      prompts.push_back(prompt(20 + 3 * i, 10 + i));
      expected.push_back(alone(prompts.back(), 24));
    }
    Engine engine(handle(), swap_config(14, 0));
    std::vector<RequestHandle> handles;
    for (const auto& p : prompts) handles.push_back(engine.add_request(p, greedy(24)));
    drain(engine);
    EXPECT_GT(engine.stats().swapped_out_blocks, 0u) << "nothing was swapped: nothing was tested";
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(handles[i].collect().tokens, expected[i]) << "request " << i;
    expect_nothing_held(engine);
  }

  // Forks (n > 1, beams), an abort, swap preemption and snapshots at once: the answers still match alone, and
  // the accounting returns to nothing held.
  static void forks_and_aborts_leak_nothing() {
    Engine engine(handle(), swap_config(10, 4));
    SamplingParams forked = greedy(20);
    forked.n = 3;
    std::vector<RequestHandle> forks = engine.add_request_n(prompt(19, 4), forked);
    RequestHandle victim = engine.add_request(prompt(23, 5), greedy(30));
    RequestHandle other = engine.add_request(prompt(17, 6), greedy(20));
    SamplingParams beams = greedy(12);
    beams.use_beam_search = true;
    beams.n = 2;
    beams.best_of = 2;
    std::vector<RequestHandle> beam = engine.add_request_n(prompt(15, 7), beams);
    for (int i = 0; i < 10; ++i) engine.step();
    engine.abort(victim.id());
    drain(engine);
    EXPECT_GT(engine.stats().preemptions, 0u) << "the pool was large enough for all: nothing was tested";
    EXPECT_GT(engine.stats().swapped_out_blocks, 0u) << "nothing was swapped";
    EXPECT_EQ(victim.collect().finish, FinishReason::Abort);
    const std::vector<int32_t> expected = alone(prompt(19, 4), 20);
    for (RequestHandle& h : forks) EXPECT_EQ(h.collect().tokens, expected);
    EXPECT_EQ(other.collect().tokens, alone(prompt(17, 6), 20));
    // Beam search: the best hypothesis of width 2 is at least as likely as greedy; here only
    // that both finish whole (their forks' states copied, swapped and freed like the rest).
    for (RequestHandle& h : beam) EXPECT_EQ(h.collect().tokens.size(), 12u);
    expect_nothing_held(engine);
  }
};

class EngineSsmSwap : public StateSwap {};

class EngineHybridSwap : public StateSwap {
 protected:
  static void SetUpTestSuite() { set_up_state_model("granite-hybrid-mini"); }
};

class EngineRwkv7Swap : public StateSwap {
 protected:
  static void SetUpTestSuite() { set_up_state_model("rwkv7-mini"); }
};

TEST_F(EngineSsmSwap, SwappedSequencesKeepTheirState) { swapped_sequences_keep_their_state(); }
TEST_F(EngineRwkv7Swap, SwappedSequencesKeepTheirState) { swapped_sequences_keep_their_state(); }
TEST_F(EngineHybridSwap, SwappedSequencesKeepTheirState) { swapped_sequences_keep_their_state(); }
TEST_F(EngineSsmSwap, ForksAndAbortsLeakNothing) { forks_and_aborts_leak_nothing(); }
TEST_F(EngineHybridSwap, ForksAndAbortsLeakNothing) { forks_and_aborts_leak_nothing(); }

}  // namespace
}  // namespace lumen::testing
