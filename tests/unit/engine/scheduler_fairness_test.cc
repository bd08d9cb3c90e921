// Fairness between clients in the scheduler (client_seats.h, prefill_share.h), with the real
// block pool and no model: each simulated step computes what the plan says and "samples" a
// fixed token for every chunk that reaches the end.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>

#include "engine/scheduler.h"

namespace lumen::engine {
namespace {

constexpr int32_t kBlock = 4;

class SchedulerFairnessTest : public ::testing::Test {
 protected:
  void make(int32_t n_blocks, SchedulerConfig config) {
    pool_ = std::make_unique<kv::BlockPool>(n_blocks, kBlock, true);
    const std::vector<int64_t> windows = {0};  // one group, no sliding window
    layout_ = kv::make_kv_layout(windows, true);
    space_ = {pool_.get(), &layout_, -1};
    scheduler_ = std::make_unique<Scheduler>(config, *pool_);
  }
  // Distinct first tokens per sequence, so no two share a cached prefix.
  Sequence* add(uint64_t client, int64_t prompt_len, int64_t seats = 1, int priority = 0) {
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
    std::iota(prompt.begin(), prompt.end(), static_cast<int32_t>(seqs_.size()) * 10000);
    seqs_.push_back(std::make_unique<Sequence>(seqs_.size(), std::move(prompt), priority, seqs_.size(), space_, 0));
    Sequence* seq = seqs_.back().get();
    seq->client = client;
    seq->seats = seats;
    scheduler_->add(seq);
    return seq;
  }
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
  static bool samples_in(const StepPlan& plan, const Sequence* seq) {
    for (const ScheduledChunk& c : plan.chunks) {
      if (c.seq == seq) return c.samples;
    }
    return false;
  }
  int64_t running_of(uint64_t client) const {
    int64_t n = 0;
    for (const auto& seq : seqs_) n += seq->client == client && seq->state == SequenceState::Running;
    return n;
  }

  std::unique_ptr<kv::BlockPool> pool_;
  kv::KvLayout layout_;
  kv::KvSpace space_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
};

TEST_F(SchedulerFairnessTest, OneClientUsesEverySeatWhileNoOtherWaits) {
  make(256, {.max_num_seqs = 8, .max_num_batched_tokens = 256});
  for (int i = 0; i < 20; ++i) add(1, 4);
  Sequence* other = add(2, 4);
  step();
  // While client 2 waits, client 1 takes its share (8 / 2 clients) and client 2 its seat...
  EXPECT_EQ(other->state, SequenceState::Running);
  EXPECT_EQ(running_of(1), 4);
  // ...then, with no one else waiting, client 1 fills the seats left: none idles.
  step();
  EXPECT_EQ(running_of(1), 7);
}

TEST_F(SchedulerFairnessTest, AnotherClientsRequestIsAdmittedInTheNextStepDespiteAFlood) {
  // The attack, scaled down: client 1 holds every seat with more queued behind them.
  make(256, {.max_num_seqs = 8, .max_num_batched_tokens = 256});
  for (int i = 0; i < 40; ++i) add(1, 4);
  step();
  step();
  ASSERT_EQ(running_of(1), 8);
  Sequence* other = add(2, 4);
  StepPlan plan = step();
  // One of client 1's seats (its latest sequence) went to client 2, whose prompt ran whole.
  EXPECT_EQ(plan.preempted.size(), 1u);
  EXPECT_EQ(plan.preempted[0]->client, 1u);
  EXPECT_TRUE(samples_in(plan, other));
  EXPECT_EQ(running_of(1), 7);
  // And it keeps decoding every step after, while client 1 is not readmitted past its share.
  for (int i = 0; i < 5; ++i) {
    plan = step();
    EXPECT_EQ(tokens_of(plan, other), 1);
    EXPECT_TRUE(plan.preempted.empty());
  }
}

TEST_F(SchedulerFairnessTest, TwoFloodingClientsSettleOnEqualShares) {
  make(512, {.max_num_seqs = 8, .max_num_batched_tokens = 256});
  for (int i = 0; i < 30; ++i) add(1, 4);
  step();
  for (int i = 0; i < 30; ++i) add(2, 4);
  for (int i = 0; i < 6; ++i) step();
  EXPECT_EQ(running_of(1), 4);
  EXPECT_EQ(running_of(2), 4);
  // Stable: no more preemptions once both are at their share.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(step().preempted.empty());
}

TEST_F(SchedulerFairnessTest, ARequestWiderThanTheShareStillRunsForAClientWithNothingRunning) {
  // Three clients share 8 seats (2 each); client 3's request takes 4 (n = 4).
  make(512, {.max_num_seqs = 8, .max_num_batched_tokens = 256});
  for (int i = 0; i < 10; ++i) add(1, 4);
  for (int i = 0; i < 10; ++i) add(2, 4);
  step();
  Sequence* wide = add(3, 4, /*seats=*/4);
  step();
  EXPECT_EQ(wide->state, SequenceState::Running);
}

TEST_F(SchedulerFairnessTest, UnderPrioritiesAHigherPriorityExcessIsNotPreemptedForALowerRequest) {
  make(256, {.max_num_seqs = 4, .max_num_batched_tokens = 256, .policy = SchedulingPolicy::Priority});
  for (int i = 0; i < 8; ++i) add(1, 4, 1, /*priority=*/5);
  step();
  Sequence* low = add(2, 4, 1, /*priority=*/0);
  StepPlan plan = step();
  EXPECT_TRUE(plan.preempted.empty());
  EXPECT_EQ(low->state, SequenceState::Waiting);
  // Of equal priority it is.
  Sequence* equal = add(3, 4, 1, /*priority=*/5);
  plan = step();
  EXPECT_EQ(plan.preempted.size(), 1u);
  EXPECT_EQ(equal->state, SequenceState::Running);
}

TEST_F(SchedulerFairnessTest, AShortPromptBehindALongOneSamplesInTheNextStep) {
  make(512, {.max_num_seqs = 8, .max_num_batched_tokens = 16});
  Sequence* long_one = add(1, 400);
  EXPECT_EQ(tokens_of(step(), long_one), 16);
  Sequence* short_one = add(1, 6);  // the same client: prefill sharing is for everyone
  StepPlan plan = step();
  EXPECT_EQ(tokens_of(plan, short_one), 6);
  EXPECT_TRUE(samples_in(plan, short_one));
  EXPECT_EQ(tokens_of(plan, long_one), 10);
  // Then it decodes beside the long prefill, which takes the rest of each step.
  plan = step();
  EXPECT_EQ(tokens_of(plan, short_one), 1);
  EXPECT_EQ(tokens_of(plan, long_one), 15);
}

TEST_F(SchedulerFairnessTest, ALongPromptKeepsHalfTheBudgetUnderAStreamOfShortOnes) {
  make(4096, {.max_num_seqs = 512, .max_num_batched_tokens = 16});
  Sequence* long_one = add(1, 400);
  // Short requests of one token each (they end at their first sample), three of 5 tokens every
  // step: more than the budget, so a backlog of them grows.
  auto step_and_end_shorts = [&] {
    StepPlan plan = step();
    for (const ScheduledChunk& c : plan.chunks) {
      if (c.seq != long_one && c.samples) scheduler_->remove(c.seq);
    }
  };
  step_and_end_shorts();
  for (int i = 0; i < 20; ++i) {
    add(2, 5);
    add(3, 5);
    add(4, 5);
    const int64_t before = long_one->n_computed;
    step_and_end_shorts();
    EXPECT_EQ(long_one->n_computed - before, 8) << "step " << i;
  }
  EXPECT_GT(scheduler_->n_waiting(), 20u);
}

TEST_F(SchedulerFairnessTest, EqualPromptsOfOneClientRunAsBefore) {
  make(512, {.max_num_seqs = 8, .max_num_batched_tokens = 16});
  Sequence* a = add(0, 20);
  Sequence* b = add(0, 20);
  Sequence* c = add(0, 20);
  StepPlan plan = step();
  EXPECT_EQ(tokens_of(plan, a), 16);
  EXPECT_EQ(tokens_of(plan, b), 0);
  plan = step();
  EXPECT_EQ(tokens_of(plan, a), 4);
  EXPECT_EQ(tokens_of(plan, b), 12);
  EXPECT_EQ(tokens_of(plan, c), 0);
}

}  // namespace
}  // namespace lumen::engine
