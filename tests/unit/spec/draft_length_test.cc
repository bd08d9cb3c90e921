// The draft-length rule: full length when drafts are free or always accepted, shorter as
// acceptance falls or draft tokens cost more, and the learned cost recovers a known slope.
#include "spec/draft_length.h"

#include <gtest/gtest.h>

#include "spec/acceptance_history.h"
#include "spec/step_cost.h"

namespace lumen::spec {
namespace {

TEST(DraftLength, ExpectedTokensIsTheGeometricSum) {
  EXPECT_DOUBLE_EQ(expected_tokens(1.0, 5), 6.0);
  EXPECT_DOUBLE_EQ(expected_tokens(0.0, 5), 1.0);
  EXPECT_DOUBLE_EQ(expected_tokens(0.5, 2), 1.75);
}

TEST(DraftLength, FullLengthWhenFreeOrAlwaysAccepted) {
  EXPECT_EQ(best_draft_length(0.3, 0.0, 5), 5);
  EXPECT_EQ(best_draft_length(1.0, 0.25, 5), 5);
  EXPECT_EQ(best_draft_length(0.9, 0.25, 1), 1);
  EXPECT_EQ(best_draft_length(0.9, 0.25, 0), 0);
}

TEST(DraftLength, ShorterAsAcceptanceFallsOrCostRises) {
  // At a quarter of a step per draft token: 0.9 pays for 6 (2.09 tokens per step's time), 0.5 only for 1.
  EXPECT_EQ(best_draft_length(0.9, 0.25, 8), 6);
  EXPECT_EQ(best_draft_length(0.5, 0.25, 8), 1);
  int32_t last = 8;
  for (double a : {0.95, 0.9, 0.8, 0.7, 0.5, 0.2}) {
    const int32_t k = best_draft_length(a, 0.2, 8);
    EXPECT_LE(k, last) << a;
    last = k;
  }
  EXPECT_LE(best_draft_length(0.8, 0.5, 8), best_draft_length(0.8, 0.1, 8));
}

TEST(StepCost, UnknownUntilTwoDraftLengthsThenTheFittedRatio) {
  StepCost cost;
  for (int i = 0; i < 10; ++i) cost.record(5, 0.020);
  EXPECT_EQ(cost.per_draft_token(), 0.0);
  EXPECT_FALSE(cost.known());
  // 10 ms a plain step, 2 ms per draft token: 0.2.
  for (int i = 0; i < 50; ++i) {
    cost.record(0, 0.010);
    cost.record(3, 0.016);
    cost.record(5, 0.020);
  }
  EXPECT_NEAR(cost.per_draft_token(), 0.2, 0.02);
  EXPECT_TRUE(cost.known());
}

TEST(AcceptanceHistory, TokenAcceptanceCountsTheFirstRejection) {
  AcceptanceHistory h;
  EXPECT_DOUBLE_EQ(h.token_acceptance(), 1.0);
  for (int i = 0; i < 30; ++i) h.record(4, 1, 0.0);  // one accepted, then rejected: a = 1/2
  EXPECT_NEAR(h.token_acceptance(), 0.5, 0.01);
  for (int i = 0; i < 30; ++i) h.record(4, 4, 0.0);  // all accepted: back up to 1
  EXPECT_GT(h.token_acceptance(), 0.99);
}

}  // namespace
}  // namespace lumen::spec
