// The scheduler with a step time target (ITL-aware scheduling) on a fake clock: every planned
// step "takes" what a known cost law says, and that time is fed back to the cost model, as the
// engine feeds it the measured time.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "engine/scheduler.h"
#include "step_cost_law.h"

namespace lumen::engine {
namespace {

using testing::StepCostLaw;

constexpr int32_t kBlock = 16;

class SchedulerItlTest : public ::testing::Test {
 protected:
  void make(SchedulerConfig config) {
    pool_ = std::make_unique<kv::BlockPool>(4096, kBlock, true);
    layout_ = kv::make_kv_layout(std::vector<int64_t>{0}, true);
    space_ = {pool_.get(), &layout_, -1};
    scheduler_ = std::make_unique<Scheduler>(config, *pool_);
  }
  Sequence* add(int64_t prompt_len) {
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
    std::iota(prompt.begin(), prompt.end(), static_cast<int32_t>(1 + 5000 * seqs_.size()));
    seqs_.push_back(std::make_unique<Sequence>(seqs_.size(), std::move(prompt), 0, seqs_.size(), space_, 0));
    scheduler_->add(seqs_.back().get());
    return seqs_.back().get();
  }
  // One step on the fake clock: plan, "run" it for law_(shape) seconds (fed to the model),
  // complete, sample a token for every chunk that samples (and accept no draft).
  StepPlan step() {
    StepPlan plan = scheduler_->schedule();
    model_.record(plan.shape, law_(plan.shape));
    scheduler_->complete(plan);
    for (const ScheduledChunk& c : plan.chunks) {
      if (c.samples) c.seq->tokens.push_back(7);
      if (c.n_draft > 0) scheduler_->accept_draft(c.seq, 0);
    }
    return plan;
  }
  static bool has_live_decode(const StepPlan& plan) {
    for (const ScheduledChunk& c : plan.chunks) {
      if (StepTimeBudget::is_live_decode(*c.seq)) return true;
    }
    return false;
  }
  static int64_t tokens_of(const StepPlan& plan, const Sequence* seq) {
    for (const ScheduledChunk& c : plan.chunks) {
      if (c.seq == seq) return c.n_tokens;
    }
    return 0;
  }
  // `n` streams decoding (prompts of 8 tokens, prefilled and past their first token).
  std::vector<Sequence*> start_streams(int n) {
    std::vector<Sequence*> streams;
    for (int i = 0; i < n; ++i) streams.push_back(add(8));
    step();
    step();
    for (Sequence* s : streams) EXPECT_GT(s->n_generated(), 0);
    return streams;
  }

  StepCostLaw law_;
  StepTimeModel model_;
  std::unique_ptr<kv::BlockPool> pool_;
  kv::KvLayout layout_;
  kv::KvSpace space_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
};

TEST_F(SchedulerItlTest, WithoutATargetALongPromptsChunkMakesTheDecodesStepLong) {
  // The problem being solved: the step that admits a prompt is as long as its 512-token chunk.
  make({.max_num_seqs = 16, .max_num_batched_tokens = 512});
  start_streams(8);
  Sequence* prompt = add(2000);
  const StepPlan plan = step();
  EXPECT_EQ(tokens_of(plan, prompt), 512 - 8);
  EXPECT_GT(law_(plan.shape), 0.030);
}

TEST_F(SchedulerItlTest, NoStepWithDecodesIsPredictedOverTheTargetAndTheLongPromptStillFinishes) {
  make({.max_num_seqs = 16, .max_num_batched_tokens = 512});
  testing::train(model_, law_);
  const double target = 0.015;
  scheduler_->limit_step_time(model_, target, 16);
  start_streams(8);
  Sequence* prompt = add(2000);
  int steps = 0;
  int64_t largest_chunk = 0;
  while (prompt->n_computed < 2000) {
    ASSERT_LT(++steps, 200) << "the prompt stalls";
    const int64_t left = 2000 - prompt->n_computed;
    const StepPlan plan = step();
    ASSERT_TRUE(has_live_decode(plan));
    EXPECT_LE(model_.predict(plan.shape), target * (1 + 1e-9)) << "step " << steps;
    EXPECT_LE(law_(plan.shape), target * 1.02) << "step " << steps;  // the model is right, too
    EXPECT_GE(tokens_of(plan, prompt), std::min<int64_t>(16, left)) << "the floor";
    largest_chunk = std::max(largest_chunk, tokens_of(plan, prompt));
  }
  // Decodes at ~7 ms leave ~8 ms: chunks of ~60-80 tokens, far above the floor, far below 512.
  EXPECT_GT(largest_chunk, 40);
  EXPECT_LT(largest_chunk, 120);
  EXPECT_LE(steps, (2000 + 15) / 16);
}

TEST_F(SchedulerItlTest, WhenDecodesAloneExceedTheTargetTheFloorStillPrefillsEveryStep) {
  make({.max_num_seqs = 16, .max_num_batched_tokens = 512});
  testing::train(model_, law_);
  scheduler_->limit_step_time(model_, 0.001, 16);  // 8 decodes alone take ~7 ms
  start_streams(8);
  Sequence* prompt = add(200);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(tokens_of(step(), prompt), 16) << "step " << i;
  const StepPlan last = step();
  EXPECT_EQ(tokens_of(last, prompt), 200 - 12 * 16);
  EXPECT_EQ(prompt->n_computed, 200);  // ceil(200 / 16) = 13 steps
}

TEST_F(SchedulerItlTest, BeforeTheModelIsTrainedOnlyTheFloorJoinsTheDecodes) {
  make({.max_num_seqs = 16, .max_num_batched_tokens = 512});
  scheduler_->limit_step_time(model_, 1.0, 16);  // a target anything would meet, an empty model
  start_streams(3);                              // their prompts: one prefill step of 24 tokens
  Sequence* prompt = add(300);
  EXPECT_EQ(tokens_of(step(), prompt), 16);
  // The fake clock trains the model on these steps (prefill steps of two sizes were seen: the
  // streams' own prompts and the floor chunks), after which the target decides.
  EXPECT_TRUE(model_.ready());
  EXPECT_EQ(tokens_of(step(), prompt), 300 - 16);
}

TEST_F(SchedulerItlTest, WithoutDecodingStreamsAPromptGetsTheWholeTokenBudget) {
  make({.max_num_seqs = 16, .max_num_batched_tokens = 512});
  testing::train(model_, law_);
  scheduler_->limit_step_time(model_, 0.001, 16);
  Sequence* a = add(2000);
  EXPECT_EQ(tokens_of(step(), a), 512);
  EXPECT_EQ(tokens_of(step(), a), 512);
}

TEST_F(SchedulerItlTest, DraftsAreCutToWhatFitsUnderTheTarget) {
  make({.max_num_seqs = 16, .max_num_batched_tokens = 512});
  testing::train(model_, law_);
  const double target = 0.010;
  scheduler_->limit_step_time(model_, target, 16);
  std::vector<Sequence*> streams = start_streams(8);  // ~6.8 ms; a draft row ~0.6 ms
  for (Sequence* s : streams) s->draft = {1, 2, 3, 4, 5, 6};
  const StepPlan plan = step();
  int64_t drafted = 0;
  for (const ScheduledChunk& c : plan.chunks) drafted += c.n_draft;
  EXPECT_GT(drafted, 0);
  EXPECT_LT(drafted, 8 * 6);
  EXPECT_LE(model_.predict(plan.shape), target * (1 + 1e-9));
}

}  // namespace
}  // namespace lumen::engine
