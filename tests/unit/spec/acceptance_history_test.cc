// The adaptive pause: a sequence whose drafts keep failing stops drafting for doubling pauses,
// and one whose probe succeeds goes back to drafting every step.
#include "spec/acceptance_history.h"

#include <gtest/gtest.h>

namespace lumen::spec {
namespace {

// Steps until ready() says yes again, the ready step included.
int steps_until_ready(AcceptanceHistory& h) {
  int n = 1;
  while (!h.ready()) ++n;
  return n;
}

TEST(AcceptanceHistory, ANewSequenceDraftsAndGoodDraftsKeepItDrafting) {
  AcceptanceHistory h;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(h.ready());
    h.record(5, 4, 0.1);
  }
  EXPECT_GT(h.rate(), 0.7);
}

TEST(AcceptanceHistory, PoorDraftsPauseForDoublingPeriodsUntilAProbeSucceeds) {
  AcceptanceHistory h;
  int drafts = 0;
  // The average falls from 1 by a factor 0.7 per rejected draft: below 0.1 after 7.
  while (!h.paused()) {
    ASSERT_TRUE(h.ready());
    h.record(5, 0, 0.1);
    ++drafts;
  }
  EXPECT_EQ(drafts, 7);
  EXPECT_EQ(steps_until_ready(h), AcceptanceHistory::kFirstPause + 1);
  h.record(5, 0, 0.1);  // the probe fails: twice as long
  EXPECT_EQ(steps_until_ready(h), 2 * AcceptanceHistory::kFirstPause + 1);
  for (int i = 0; i < 10; ++i) {
    h.record(5, 0, 0.1);
    steps_until_ready(h);
  }
  h.record(5, 0, 0.1);
  EXPECT_EQ(steps_until_ready(h), AcceptanceHistory::kLongestPause + 1);  // capped
  h.record(5, 5, 0.1);  // a full acceptance lifts the average over the minimum
  EXPECT_FALSE(h.paused());
  EXPECT_TRUE(h.ready());
  // And the pauses start short again.
  while (!h.paused()) h.record(5, 0, 0.1);
  EXPECT_EQ(steps_until_ready(h), AcceptanceHistory::kFirstPause + 1);
}

// A token tree counts by depth: a tree of 8 candidates whose best branch the model takes whole
// is a fully accepted draft (counting its 20 nodes instead would be a share of 0.25 and, at a
// higher minimum, a pause for a drafter that is always right), and the per-token acceptance
// stays at 1 when nothing deeper was there to refuse.
TEST(AcceptanceHistory, TreesCountDepthsNotNodes) {
  AcceptanceHistory tree;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(tree.ready());
    tree.record(/*depth=*/4, /*accepted=*/4, /*rejected_next=*/false, 0.5);
  }
  EXPECT_DOUBLE_EQ(tree.rate(), 1.0);
  EXPECT_DOUBLE_EQ(tree.token_acceptance(), 1.0);
  // Two tokens accepted along a branch that had a deeper node, refused: 2 of 3 examined.
  AcceptanceHistory partial;
  for (int i = 0; i < 60; ++i) partial.record(4, 2, true, 0.0);
  EXPECT_NEAR(partial.token_acceptance(), 2.0 / 3.0, 1e-5);
  EXPECT_NEAR(partial.rate(), 0.5, 1e-5);
  // The same two tokens at the end of a shorter branch (nothing deeper examined): 2 of 2.
  AcceptanceHistory leaf;
  for (int i = 0; i < 60; ++i) leaf.record(4, 2, false, 0.0);
  EXPECT_NEAR(leaf.token_acceptance(), 1.0, 1e-5);
  // A chain is the same rule with rejected_next = accepted < drafted.
  AcceptanceHistory chain, explicit_chain;
  for (int i = 0; i < 10; ++i) {
    chain.record(5, i % 6, 0.1);
    explicit_chain.record(5, i % 6, i % 6 < 5, 0.1);
  }
  EXPECT_DOUBLE_EQ(chain.token_acceptance(), explicit_chain.token_acceptance());
  EXPECT_DOUBLE_EQ(chain.rate(), explicit_chain.rate());
}

TEST(AcceptanceHistory, AMinimumOfZeroNeverPauses) {
  AcceptanceHistory h;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(h.ready());
    h.record(5, 0, 0.0);
  }
}

// The measured break-even (issue 49): drafts accepted often enough for min_acceptance_rate but
// too few for what their rows cost on this machine. 2 tokens per step for 8 rows pays while a
// row costs less than 1/8 of a plain step, and not above.
TEST(AcceptanceHistory, StepsYieldingLessThanTheirCostPauseAtTheMeasuredBreakEven) {
  AcceptanceHistory cheap;
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(cheap.ready());
    cheap.record(8, 1, true, 8, 0.1, 0.1);  // 2 tokens for 1 + 0.8 plain steps: pays
  }
  EXPECT_FALSE(cheap.below_break_even());
  AcceptanceHistory dear;
  dear.record(8, 1, true, 8, 0.1, 0.2);  // 2 tokens for 1 + 1.6 plain steps
  EXPECT_TRUE(dear.below_break_even());
  EXPECT_TRUE(dear.paused());
  EXPECT_GT(dear.rate(), 0.1);  // the acceptance rule alone would have gone on
  EXPECT_EQ(steps_until_ready(dear), AcceptanceHistory::kFirstPause + 1);
  dear.record(8, 1, true, 8, 0.1, 0.2);  // the probe still does not pay: twice as long
  EXPECT_EQ(steps_until_ready(dear), 2 * AcceptanceHistory::kFirstPause + 1);
  // Once the drafts are taken whole the same cost pays again.
  for (int i = 0; i < 4; ++i) dear.record(8, 8, false, 8, 0.1, 0.2);
  EXPECT_FALSE(dear.below_break_even());
  EXPECT_FALSE(dear.paused());
}

// Lookahead's window is paid in every step, also where no n-gram matched and nothing was
// drafted: those steps count as cost for one token.
TEST(AcceptanceHistory, RowsWithoutADraftCountAsCost) {
  AcceptanceHistory h;
  h.record(0, 0, false, 12, 0.1, 0.05);  // 1 token for 1 + 0.6 plain steps
  EXPECT_TRUE(h.below_break_even());
  EXPECT_TRUE(h.paused());
  EXPECT_DOUBLE_EQ(h.rate(), 1.0);  // no draft: the acceptance rate is untouched
}

// With the cost of a row unknown (0) every step pays, whatever it yields.
TEST(AcceptanceHistory, AnUnknownCostNeverPausesForTheBreakEven) {
  AcceptanceHistory h;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(h.ready());
    h.record(0, 0, false, 12, 0.1, 0.0);
  }
  EXPECT_FALSE(h.below_break_even());
}

}  // namespace
}  // namespace lumen::spec
