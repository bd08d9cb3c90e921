// The scheduler on its own, with the real block pool and no model: each simulated step computes
// what the plan says and "samples" a fixed token for every chunk that reaches the end.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>

namespace lumen::engine {
namespace {

constexpr int32_t kBlock = 4;

class SchedulerTest : public ::testing::Test {
 protected:
  // layer_windows: one group of every layer unless some layer has a window (kv/kv_layout.h).
  void make(int32_t n_blocks, SchedulerConfig config, bool prefix_caching = true,
            int64_t swap_slots = 0, std::vector<int64_t> layer_windows = {0}) {
    pool_ = std::make_unique<kv::BlockPool>(n_blocks, kBlock, prefix_caching);
    layout_ = kv::make_kv_layout(layer_windows, true);
    space_ = {pool_.get(), &layout_, layout_.has_windows() ? *pool_->allocate() : -1};
    if (swap_slots > 0) swap_ = std::make_unique<SwapSpace>(swap_slots, 8);
    scheduler_ = std::make_unique<Scheduler>(config, *pool_, swap_.get());
  }
  Sequence* add(int64_t prompt_len, int priority = 0, int32_t first_token = 1) {
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
    std::iota(prompt.begin(), prompt.end(), first_token);
    seqs_.push_back(std::make_unique<Sequence>(seqs_.size(), std::move(prompt), priority,
                                               seqs_.size(), space_, 0));
    scheduler_->add(seqs_.back().get());
    return seqs_.back().get();
  }
  // One step: schedule, complete, append a token to every sampling chunk.
  StepPlan step() {
    StepPlan plan = scheduler_->schedule();
    scheduler_->complete(plan);
    for (const ScheduledChunk& c : plan.chunks) {
      if (c.samples) c.seq->tokens.push_back(1000 + static_cast<int32_t>(c.seq->n_generated()));
    }
    pool_->check_consistency();
    return plan;
  }
  static int64_t tokens_of(const StepPlan& plan, const Sequence* seq) {
    for (const ScheduledChunk& c : plan.chunks) {
      if (c.seq == seq) return c.n_tokens;
    }
    return 0;
  }

  std::unique_ptr<kv::BlockPool> pool_;
  kv::KvLayout layout_;
  kv::KvSpace space_;
  std::unique_ptr<SwapSpace> swap_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
};

TEST_F(SchedulerTest, LongPromptIsChunkedUnderTheTokenBudget) {
  make(64, {.max_num_seqs = 8, .max_num_batched_tokens = 10});
  Sequence* a = add(25);
  EXPECT_EQ(tokens_of(step(), a), 10);
  EXPECT_EQ(tokens_of(step(), a), 10);
  StepPlan last = step();
  EXPECT_EQ(tokens_of(last, a), 5);
  EXPECT_TRUE(last.chunks[0].samples);
  EXPECT_EQ(a->n_computed, 25);
  EXPECT_EQ(a->tokens.size(), 26u);
  EXPECT_EQ(tokens_of(step(), a), 1);  // decode
}

TEST_F(SchedulerTest, DecodesGoFirstAndPrefillTakesTheRestOfTheBudget) {
  make(64, {.max_num_seqs = 8, .max_num_batched_tokens = 8});
  Sequence* a = add(3);
  Sequence* b = add(3);
  step();  // both prefill (3 + 3 <= 8)
  Sequence* c = add(40);
  StepPlan plan = step();
  ASSERT_EQ(plan.chunks.size(), 3u);
  EXPECT_EQ(plan.chunks[0].seq, a);
  EXPECT_EQ(plan.chunks[1].seq, b);
  EXPECT_EQ(plan.chunks[2].seq, c);
  EXPECT_EQ(tokens_of(plan, c), 6);
  EXPECT_FALSE(plan.chunks[2].samples);
  // While c is still in prefill, a and b keep decoding every step.
  for (int i = 0; i < 4; ++i) {
    plan = step();
    EXPECT_EQ(tokens_of(plan, a), 1);
    EXPECT_EQ(tokens_of(plan, b), 1);
  }
}

TEST_F(SchedulerTest, MaxNumSeqsLimitsRunningSequences) {
  make(64, {.max_num_seqs = 2, .max_num_batched_tokens = 100});
  add(3);
  add(3);
  Sequence* c = add(3);
  step();
  EXPECT_EQ(scheduler_->n_running(), 2u);
  EXPECT_EQ(c->state, SequenceState::Waiting);
}

TEST_F(SchedulerTest, RunningOutOfBlocksPreemptsTheLatestArrival) {
  // 6 blocks of 4: two sequences of 8-token prompts use 2 blocks each (+1 for the sampled
  // token soon); growing both past 12 tokens needs 8 blocks.
  make(6, {.max_num_seqs = 4, .max_num_batched_tokens = 64, .watermark_blocks = 0});
  Sequence* a = add(8);
  Sequence* b = add(8, 0, /*first_token=*/100);
  uint64_t preemptions = 0;
  for (int i = 0; i < 12 && preemptions == 0; ++i) preemptions += step().preempted.size();
  ASSERT_EQ(preemptions, 1u);
  EXPECT_EQ(a->state, SequenceState::Running);
  EXPECT_EQ(b->state, SequenceState::Waiting);
  EXPECT_EQ(b->n_computed, 0);
  EXPECT_GT(b->n_generated(), 0);  // keeps what it generated; recomputes it later
  scheduler_->remove(a);
  // b comes back: its full blocks were cached when it was preempted, so it recomputes only the
  // tail of prompt + generated tokens, then samples again.
  const int64_t total = static_cast<int64_t>(b->tokens.size());
  StepPlan plan = step();
  EXPECT_EQ(b->state, SequenceState::Running);
  EXPECT_EQ(b->n_computed, total);
  EXPECT_LT(tokens_of(plan, b), total);
  EXPECT_EQ(static_cast<int64_t>(b->tokens.size()), total + 1);
  scheduler_->remove(b);
  EXPECT_EQ(pool_->n_used(), 0);
  EXPECT_EQ(pool_->n_available(), 6);
}

TEST_F(SchedulerTest, SwapPreemptionKeepsTheComputedTokensAndBringsThemBack) {
  make(6, {.max_num_seqs = 4, .max_num_batched_tokens = 64, .watermark_blocks = 0}, true, 8);
  Sequence* a = add(8);
  Sequence* b = add(8, 0, /*first_token=*/100);
  StepPlan plan;
  for (int i = 0; i < 12 && plan.preempted.empty(); ++i) plan = step();
  ASSERT_EQ(plan.preempted.size(), 1u);
  ASSERT_EQ(plan.preempted[0], b);
  // b had 12 tokens' K/V in 3 blocks: all three go to host slots, and it keeps n_computed.
  ASSERT_EQ(plan.swap_out.size(), 3u);
  EXPECT_EQ(b->n_computed, 12);
  EXPECT_EQ(b->swap_slots.size(), 3u);
  EXPECT_EQ(swap_->n_free(), 5);
  scheduler_->remove(a);
  plan = step();
  // Back in fresh blocks: the 3 blocks are copied in and only the last token is computed.
  ASSERT_EQ(plan.swap_in.size(), 3u);
  EXPECT_EQ(tokens_of(plan, b), 1);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(plan.swap_in[i].block, b->blocks.table(0)[i]);
  EXPECT_EQ(b->n_computed, 13);
  EXPECT_EQ(swap_->n_free(), 8);
  scheduler_->remove(b);
  EXPECT_EQ(pool_->n_used(), 0);
}

TEST_F(SchedulerTest, SwapWithAWindowedGroupMovesOnlyTheHeldBlocks) {
  // Two layer groups: one full, one with a 4-position window (two blocks at most once computed).
  make(12, {.max_num_seqs = 4, .max_num_batched_tokens = 64, .watermark_blocks = 0}, true, 16, {0, 4});
  Sequence* a = add(8);
  Sequence* b = add(8, 0, /*first_token=*/100);
  StepPlan plan;
  for (int i = 0; i < 40 && plan.preempted.empty(); ++i) plan = step();
  ASSERT_EQ(plan.preempted.size(), 1u);
  ASSERT_EQ(plan.preempted[0], b);
  const int64_t n = b->n_computed;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const int64_t windowed = blocks - kv::first_block_in_window(n, 4, kBlock);
  ASSERT_EQ(static_cast<int64_t>(plan.swap_out.size()), blocks + windowed);
  ASSERT_LT(windowed, blocks);  // the window's blocks only
  scheduler_->remove(a);
  plan = step();
  ASSERT_EQ(static_cast<int64_t>(plan.swap_in.size()), blocks + windowed);
  EXPECT_EQ(tokens_of(plan, b), 1);
  EXPECT_EQ(b->n_computed, n + 1);
  // The windowed group's table starts with null entries, then the restored window.
  EXPECT_EQ(b->blocks.table(1)[0], space_.null_block);
  scheduler_->remove(b);
  EXPECT_EQ(pool_->n_used(), 1);  // the null block
  EXPECT_EQ(swap_->n_free(), 16);
}

TEST_F(SchedulerTest, ASequenceThatCannotFitAloneIsReportedOutOfBlocks) {
  make(2, {.max_num_seqs = 4, .max_num_batched_tokens = 64, .watermark_blocks = 0});
  Sequence* a = add(7);
  step();  // 7 tokens in 2 blocks; the sampled 8th fits too
  step();
  StepPlan plan = step();  // the 9th position needs a third block
  ASSERT_EQ(plan.out_of_blocks.size(), 1u);
  EXPECT_EQ(plan.out_of_blocks[0], a);
  scheduler_->remove(a);
  EXPECT_EQ(pool_->n_used(), 0);
}

TEST_F(SchedulerTest, PriorityPolicyPreemptsLowerPriorityForAHigherOne) {
  make(64, {.max_num_seqs = 1, .max_num_batched_tokens = 64,
            .policy = SchedulingPolicy::Priority});
  Sequence* low = add(4, /*priority=*/0);
  step();
  Sequence* high = add(4, /*priority=*/5);
  StepPlan plan = step();
  ASSERT_EQ(plan.preempted.size(), 1u);
  EXPECT_EQ(plan.preempted[0], low);
  EXPECT_EQ(high->state, SequenceState::Running);
  EXPECT_EQ(low->state, SequenceState::Waiting);
}

TEST_F(SchedulerTest, FcfsNeverPreemptsForPriority) {
  make(64, {.max_num_seqs = 1, .max_num_batched_tokens = 64});
  Sequence* low = add(4, 0);
  step();
  Sequence* high = add(4, 5);
  StepPlan plan = step();
  EXPECT_TRUE(plan.preempted.empty());
  EXPECT_EQ(low->state, SequenceState::Running);
  EXPECT_EQ(high->state, SequenceState::Waiting);
}

TEST_F(SchedulerTest, CachedPrefixIsAdoptedAndNotRecomputed) {
  make(64, {.max_num_seqs = 4, .max_num_batched_tokens = 64});
  Sequence* a = add(12);
  step();
  scheduler_->remove(a);  // its 3 full blocks stay cached
  Sequence* b = add(14);  // same first 12 tokens (iota from 1), then 2 more
  StepPlan plan = step();
  EXPECT_EQ(tokens_of(plan, b), 2);
  EXPECT_EQ(pool_->counters().hit_blocks, 3u);
}

TEST_F(SchedulerTest, AtLeastTheLastPromptTokenIsComputed) {
  make(64, {.max_num_seqs = 4, .max_num_batched_tokens = 64});
  Sequence* a = add(8);
  step();
  scheduler_->remove(a);
  Sequence* b = add(8);  // fully cached prompt: its last block is recomputed for logits
  StepPlan plan = step();
  EXPECT_GE(tokens_of(plan, b), 1);
  EXPECT_TRUE(plan.chunks[0].samples);
}

TEST_F(SchedulerTest, AdmissionRespectsTheWatermark) {
  make(8, {.max_num_seqs = 8, .max_num_batched_tokens = 64, .watermark_blocks = 3});
  Sequence* a = add(16);  // needs 4 blocks: 8 - 4 >= 3
  Sequence* b = add(8);   // needs 2 more: 4 - 2 < 3, waits
  step();
  EXPECT_EQ(a->state, SequenceState::Running);
  EXPECT_EQ(b->state, SequenceState::Waiting);
  EXPECT_EQ(b->blocks.n_held_blocks(), 0);  // a waiting sequence holds no blocks
}

}  // namespace
}  // namespace lumen::engine
