// ITL-aware scheduling's per-step budget: which prefill chunk and draft sizes it grants, given a
// cost model trained on a known law.
#include "engine/step_time_budget.h"

#include <gtest/gtest.h>

#include <memory>
#include <limits>
#include <numeric>

#include "kv/block_pool.h"
#include "kv/kv_layout.h"
#include "lumen/error.h"
#include "step_cost_law.h"

namespace lumen::engine {
namespace {

using testing::StepCostLaw;

class StepTimeBudgetTest : public ::testing::Test {
 protected:
  StepTimeBudgetTest()
      : pool_(256, 16, false),
        layout_(kv::make_kv_layout(std::vector<int64_t>{0}, true)),
        space_{&pool_, &layout_, -1} {}

  // A sequence that computed `computed` of its `len` tokens and generated `generated` of them.
  Sequence& seq(int64_t len, int64_t computed, int64_t generated = 0) {
    std::vector<int32_t> tokens(static_cast<size_t>(len));
    std::iota(tokens.begin(), tokens.end(), 1);
    seqs_.push_back(std::make_unique<Sequence>(seqs_.size(), tokens, 0, seqs_.size(), space_, 0));
    Sequence& s = *seqs_.back();
    s.prompt_len = len - generated;
    s.n_computed = computed;
    return s;
  }
  Sequence& decoding(int64_t context) { return seq(context + 1, context, 5); }

  kv::BlockPool pool_;
  kv::KvLayout layout_;
  kv::KvSpace space_;
  std::vector<std::unique_ptr<Sequence>> seqs_;
  StepCostLaw law_;
  StepTimeModel model_;
};

TEST_F(StepTimeBudgetTest, GrantsTheLargestPrefillChunkThatFitsBesideTheDecodes) {
  testing::train(model_, law_);
  StepTimeBudget budget(model_, 0.020, 16);
  budget.start();
  for (int i = 0; i < 8; ++i) budget.add(decoding(100), 1, 1);
  Sequence& prompt = seq(1000, 0);
  const int64_t n = budget.prefill_room(prompt, 512);
  // 8 decodes: 2 + 0.8 + 4 + ~0.16 ms; the rest of 20 ms buys ~125 prefill tokens.
  EXPECT_GT(n, 100);
  EXPECT_LT(n, 140);
  StepShape fits = budget.shape();
  fits.add_chunk(0, n, 0, true);
  EXPECT_LE(law_(fits), 0.020 * 1.01);
  StepShape over = budget.shape();
  over.add_chunk(0, n + 1, 0, true);
  EXPECT_GT(law_(over), 0.020 * 0.99);
}

TEST_F(StepTimeBudgetTest, ChunksShrinkAsTheDecodeBatchGrowsAndALaterChunkGetsWhatIsLeft) {
  testing::train(model_, law_);
  StepTimeBudget budget(model_, 0.020, 16);
  Sequence& prompt = seq(1000, 0);
  int64_t last = 1 << 30;
  for (int rows : {1, 4, 8, 16}) {
    budget.start();
    for (int i = 0; i < rows; ++i) budget.add(decoding(100), 1, 1);
    const int64_t n = budget.prefill_room(prompt, 512);
    EXPECT_LT(n, last) << rows << " decodes";
    last = n;
  }
  // A second prompt in the same step gets what the first left.
  budget.start();
  for (int i = 0; i < 4; ++i) budget.add(decoding(100), 1, 1);
  Sequence& second = seq(1000, 0);
  const int64_t alone = budget.prefill_room(second, 512);
  EXPECT_EQ(budget.prefill_room(prompt, 50), 50);
  budget.add(prompt, 50, 0);
  const int64_t shared = budget.prefill_room(second, 512);
  EXPECT_LT(shared, alone - 40);
  EXPECT_GT(shared, 0);
}

TEST_F(StepTimeBudgetTest, AStepWithoutDecodingStreamsHasNoTimeLimit) {
  testing::train(model_, law_);
  StepTimeBudget budget(model_, 0.001, 16);
  budget.start();
  EXPECT_EQ(budget.prefill_room(seq(1000, 0), 512), 512);
  // A prompt that finishes its prefill in this step is not yet a stream.
  budget.add(seq(300, 200), 100, 1);
  EXPECT_EQ(budget.prefill_room(seq(1000, 0), 512), 512);
}

TEST_F(StepTimeBudgetTest, TheFloorKeepsPrefillGoingWhenDecodesAloneExceedTheTarget) {
  testing::train(model_, law_);
  StepTimeBudget budget(model_, 0.005, 16);  // 16 decodes alone take ~12 ms
  budget.start();
  for (int i = 0; i < 16; ++i) budget.add(decoding(100), 1, 1);
  Sequence& a = seq(1000, 0);
  EXPECT_EQ(budget.prefill_room(a, 512), 16);
  EXPECT_EQ(budget.prefill_room(a, 10), 10);  // never more than wanted
  // The floor is per step, shared: a second prompt gets what the first left of it.
  budget.add(a, 10, 0);
  Sequence& b = seq(1000, 0);
  EXPECT_EQ(budget.prefill_room(b, 512), 6);
  budget.add(b, 6, 0);
  EXPECT_EQ(budget.prefill_room(seq(1000, 0), 512), 0);
}

TEST_F(StepTimeBudgetTest, BeforeTheModelCanPriceAPrefillTokenOnlyTheFloorIsGranted) {
  StepTimeBudget budget(model_, 1.0, 24);  // generous target, untrained model
  budget.start();
  budget.add(decoding(100), 1, 1);
  EXPECT_EQ(budget.prefill_room(seq(1000, 0), 512), 24);
  // Drafts are left to speculation's own adaptivity until then.
  Sequence& d = decoding(50);
  budget.add(d, 1, 1);
  EXPECT_EQ(budget.draft_room(d, 1, 5), 5);
}

TEST_F(StepTimeBudgetTest, DraftsGetOnlyWhatIsLeftUnderTheTarget) {
  testing::train(model_, law_);
  // 4 decodes at context 100: 2 + 0.4 + 2 + 0.08 = 4.48 ms; each draft row 0.6 ms.
  StepTimeBudget budget(model_, 0.0065, 16);
  budget.start();
  Sequence& d = decoding(100);
  budget.add(d, 1, 1);
  for (int i = 0; i < 3; ++i) budget.add(decoding(100), 1, 1);
  const int64_t n = budget.draft_room(d, 1, 10);
  EXPECT_EQ(n, 3);
  budget.add_draft(d, 1, n);
  EXPECT_EQ(budget.draft_room(decoding(100), 1, 10), 0);
}

TEST_F(StepTimeBudgetTest, RefusesANonsenseTargetOrFloor) {
  EXPECT_THROW(StepTimeBudget(model_, 0.0, 16), Error);
  EXPECT_THROW(StepTimeBudget(model_, -1.0, 16), Error);
  EXPECT_THROW(StepTimeBudget(model_, std::numeric_limits<double>::quiet_NaN(), 16), Error);
  EXPECT_THROW(StepTimeBudget(model_, 0.05, 0), Error);
}

}  // namespace
}  // namespace lumen::engine
