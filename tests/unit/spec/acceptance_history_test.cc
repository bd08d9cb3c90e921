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

TEST(AcceptanceHistory, AMinimumOfZeroNeverPauses) {
  AcceptanceHistory h;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(h.ready());
    h.record(5, 0, 0.0);
  }
}

}  // namespace
}  // namespace lumen::spec
