// share_prefill_budget on its own: the oldest prompt's guaranteed half, shortest-remaining-first
// for the rest, and the budget never exceeded.
#include "engine/prefill_share.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace lumen::engine {
namespace {

std::vector<int64_t> grants(std::vector<int64_t> needs, int64_t budget) { return share_prefill_budget(needs, budget); }

TEST(PrefillShare, OnePromptTakesWhatItNeedsUpToTheBudget) {
  EXPECT_EQ(grants({3000}, 512), (std::vector<int64_t>{512}));
  EXPECT_EQ(grants({20}, 512), (std::vector<int64_t>{20}));
  EXPECT_EQ(grants({5}, 1), (std::vector<int64_t>{1}));
}

TEST(PrefillShare, AShortPromptBehindALongOneIsComputedWhole) {
  // The attack: a 3000-token prompt first, a 20-token one behind it.
  EXPECT_EQ(grants({3000, 20}, 512), (std::vector<int64_t>{492, 20}));
  // Several short ones: all of them fit beside the long one's half.
  EXPECT_EQ(grants({3000, 30, 10, 50}, 512), (std::vector<int64_t>{422, 30, 10, 50}));
}

TEST(PrefillShare, TheOldestKeepsHalfTheBudgetHoweverManyShortOnesArrive) {
  std::vector<int64_t> needs = {3000};
  needs.resize(41, 100);  // 40 prompts of 100 tokens: 4000 tokens behind it
  const std::vector<int64_t> g = grants(needs, 512);
  EXPECT_EQ(g[0], 256);
  // The rest, shortest first: equal here, so in rank order (two whole, one cut).
  EXPECT_EQ(g[1], 100);
  EXPECT_EQ(g[2], 100);
  EXPECT_EQ(g[3], 56);
  EXPECT_EQ(g[4], 0);
}

TEST(PrefillShare, EqualPromptsRunFirstComeFirstServed) {
  // The one begun has fewer tokens left, so it finishes before the next starts, as before.
  EXPECT_EQ(grants({100, 100, 100}, 150), (std::vector<int64_t>{100, 50, 0}));
  EXPECT_EQ(grants({40, 100, 100}, 150), (std::vector<int64_t>{40, 100, 10}));
}

TEST(PrefillShare, ShorterLaterPromptsGoBeforeLongerEarlierOnes) {
  EXPECT_EQ(grants({100, 400, 300, 8}, 128), (std::vector<int64_t>{100, 0, 20, 8}));
}

TEST(PrefillShare, GrantsNeverExceedNeedsOrTheBudgetAndLeaveNoUsableBudgetIdle) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    const auto n = std::uniform_int_distribution<size_t>(1, 12)(rng);
    std::vector<int64_t> needs(n);
    for (int64_t& need : needs) need = std::uniform_int_distribution<int64_t>(1, 1500)(rng);
    const int64_t budget = std::uniform_int_distribution<int64_t>(1, 1024)(rng);
    const std::vector<int64_t> g = grants(needs, budget);
    ASSERT_EQ(g.size(), n);
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_GE(g[i], 0);
      ASSERT_LE(g[i], needs[i]);
      total += g[i];
    }
    const int64_t wanted = std::accumulate(needs.begin(), needs.end(), int64_t{0});
    ASSERT_EQ(total, std::min(budget, wanted)) << "round " << round;
    ASSERT_GE(g[0], std::min(needs[0], (budget + 1) / 2)) << "round " << round;
  }
}

TEST(PrefillShare, NothingToShare) {
  EXPECT_TRUE(grants({}, 512).empty());
  EXPECT_EQ(grants({10, 10}, 0), (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace lumen::engine
