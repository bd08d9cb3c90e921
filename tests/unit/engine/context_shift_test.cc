// When a sequence shifts its context and by how much (engine/context_shift.h), and what the
// shift does to its tokens and counters.
#include "engine/context_shift.h"

#include <gtest/gtest.h>

#include <numeric>

namespace lumen::engine {
namespace {

constexpr int64_t kBlock = 16;

TEST(ContextShift, ShiftHalvesWhatFollowsTheKeptBlocksAtTheContextLimit) {
  const ContextShiftPolicy policy{.enabled = true, .keep_tokens = 20, .window_tokens = 0, .max_model_len = 256};
  EXPECT_FALSE(shift_due(policy, 255, kBlock));
  const auto due = shift_due(policy, 256, kBlock);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->keep_blocks, 2u);                 // 20 tokens: two whole blocks
  EXPECT_EQ(due->discard_blocks, (16u - 2u) / 2);  // half of the 14 after them
  ContextShiftPolicy off = policy;
  off.enabled = false;
  EXPECT_FALSE(shift_due(off, 1000, kBlock));
}

TEST(ContextShift, StreamingKeepsTheSinksAndTheWindow) {
  const ContextShiftPolicy policy{.enabled = true, .keep_tokens = 4, .window_tokens = 64, .max_model_len = 4096};
  EXPECT_EQ(positions_held(policy, kBlock), 16 + 64 + 16);
  EXPECT_FALSE(shift_due(policy, 95, kBlock));
  const auto due = shift_due(policy, 96, kBlock);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->keep_blocks, 1u);
  EXPECT_EQ(due->discard_blocks, 1u);  // 96 - 16 - 64 = 16: one block
  // Every shift leaves at most the sinks and the window.
  for (int64_t n = 96; n < 400; ++n) {
    const auto d = shift_due(policy, n, kBlock);
    ASSERT_TRUE(d);
    EXPECT_LE(n - static_cast<int64_t>(d->discard_blocks) * kBlock, 16 + 64 + kBlock - 1) << n;
  }
}

TEST(ContextShift, ApplyDropsTokensAndCountsWhatWasGenerated) {
  kv::BlockPool pool(32, kBlock);
  const kv::KvLayout layout = kv::make_kv_layout(std::vector<int64_t>{0, 0}, true);
  const kv::KvSpace space{&pool, &layout, -1};
  std::vector<int32_t> prompt(40);
  std::iota(prompt.begin(), prompt.end(), 0);
  Sequence seq(1, prompt, 0, 0, space, 0);
  for (int32_t t = 0; t < 60; ++t) seq.tokens.push_back(1000 + t);  // 100 tokens, 99 computed
  std::vector<kv::BlockCopy> copies;
  ASSERT_TRUE(seq.blocks.reserve(0, 99, copies));
  seq.n_computed = 99;
  seq.blocks.commit(seq.tokens, 99);
  std::vector<kv::BlockId> moved;
  // Drop positions [16, 64): 24 prompt tokens and 24 generated ones.
  ASSERT_TRUE(apply_shift(seq, ShiftPlan{1, 3}, kBlock, copies, moved));
  EXPECT_EQ(seq.tokens.size(), 52u);
  EXPECT_EQ(seq.n_computed, 51);
  EXPECT_EQ(seq.prompt_len, 16);
  EXPECT_EQ(seq.n_generated(), 60);  // still every token it generated
  EXPECT_EQ(seq.tokens[15], 15);
  EXPECT_EQ(seq.tokens[16], 1000 + 24);
  EXPECT_EQ(moved.size(), 3u);  // blocks 4, 5, 6 (positions 64..111) moved down to 1..3
  EXPECT_EQ(seq.uncomputed(), 1);
}

}  // namespace
}  // namespace lumen::engine
