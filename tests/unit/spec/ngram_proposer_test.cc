// Prompt lookup: the longest suffix match in [min_n, max_n] at its most recent earlier
// occurrence proposes what followed it (repeating past the end); checked on hand-made cases and against a brute-force
// restatement of the rule on random sequences over a small alphabet (many matches and ties).
#include "spec/ngram_proposer.h"

#include <gtest/gtest.h>

#include <random>

namespace lumen::spec {
namespace {

std::vector<int32_t> lookup(const std::vector<int32_t>& tokens, int32_t min_n, int32_t max_n, int32_t k) {
  std::vector<int32_t> out = {-1};  // must be cleared
  ngram_lookup(tokens, min_n, max_n, k, out);
  return out;
}

TEST(NgramLookup, ProposesWhatFollowedTheEarlierOccurrence) {
  EXPECT_EQ(lookup({1, 2, 3, 4, 9, 9, 1, 2, 3}, 2, 3, 5), (std::vector<int32_t>{4, 9, 9, 1, 2}));
  EXPECT_EQ(lookup({1, 2, 3, 4, 9, 9, 1, 2, 3}, 2, 3, 2), (std::vector<int32_t>{4, 9}));
}

TEST(NgramLookup, NoMatchNoProposal) {
  EXPECT_TRUE(lookup({1, 2, 3, 4, 5, 6}, 1, 3, 5).empty());
  EXPECT_TRUE(lookup({7}, 1, 3, 5).empty());
  EXPECT_TRUE(lookup({}, 1, 3, 5).empty());
  // A one-token match is below min_n = 2.
  EXPECT_TRUE(lookup({5, 8, 1, 9, 5}, 2, 3, 5).empty());
  EXPECT_EQ(lookup({5, 8, 1, 9, 5}, 1, 3, 5), (std::vector<int32_t>{8, 1, 9, 5, 8}));
  EXPECT_TRUE(lookup({1, 2, 3, 1, 2}, 2, 2, 0).empty());
}

TEST(NgramLookup, LongestMatchWinsOverAMoreRecentShorterOne) {
  // [1 2 3] occurs at the start (followed by 10); only [2 3] occurs later (followed by 11).
  EXPECT_EQ(lookup({1, 2, 3, 10, 9, 2, 3, 11, 1, 2, 3}, 1, 3, 1), (std::vector<int32_t>{10}));
  // With max_n = 2 both are matches of length 2: the most recent wins.
  EXPECT_EQ(lookup({1, 2, 3, 10, 9, 2, 3, 11, 1, 2, 3}, 1, 2, 1), (std::vector<int32_t>{11}));
}

TEST(NgramLookup, TiesGoToTheMostRecentOccurrenceWhoseContinuationRepeatsPastTheEnd) {
  // "1 2" last occurred 3 tokens back: 6 1 2 follow it, then the same period again.
  EXPECT_EQ(lookup({1, 2, 5, 1, 2, 6, 1, 2}, 2, 2, 8), (std::vector<int32_t>{6, 1, 2, 6, 1, 2, 6, 1}));
  // Overlapping repeats: the occurrence ending one before the end, a loop of one token.
  EXPECT_EQ(lookup({4, 4, 4, 4}, 2, 3, 5), (std::vector<int32_t>{4, 4, 4, 4, 4}));
  // A loop of two tokens (a small model's "::arch::arch...").
  EXPECT_EQ(lookup({9, 5, 7, 5, 7, 5, 7}, 2, 4, 5), (std::vector<int32_t>{5, 7, 5, 7, 5}));
}

// The rule restated the slow way: lengths from max_n down, positions from the latest down.
std::vector<int32_t> brute_force(const std::vector<int32_t>& t, int32_t min_n, int32_t max_n, int32_t k) {
  const auto len = static_cast<int64_t>(t.size());
  for (int64_t n = max_n; n >= min_n; --n) {
    if (n >= len) continue;
    for (int64_t start = len - n - 1; start >= 0; --start) {
      bool same = true;
      for (int64_t i = 0; i < n && same; ++i) same = t[static_cast<size_t>(start + i)] == t[static_cast<size_t>(len - n + i)];
      if (!same) continue;
      // What followed, read on through the proposal itself past the end.
      std::vector<int32_t> seen = t;
      for (int64_t i = start + n; std::ssize(seen) < len + k; ++i) seen.push_back(seen[static_cast<size_t>(i)]);
      return {seen.begin() + len, seen.end()};
    }
  }
  return {};
}

TEST(NgramLookup, AgreesWithTheRuleRestatedOnRandomSequences) {
  std::mt19937 rng(7);
  int proposals = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int alphabet = 2 + trial % 5;
    std::vector<int32_t> tokens(std::uniform_int_distribution<size_t>(0, 40)(rng));
    for (int32_t& t : tokens) t = std::uniform_int_distribution<int32_t>(0, alphabet - 1)(rng);
    const int32_t min_n = std::uniform_int_distribution<int32_t>(1, 4)(rng);
    const int32_t max_n = min_n + std::uniform_int_distribution<int32_t>(0, 3)(rng);
    const int32_t k = std::uniform_int_distribution<int32_t>(1, 7)(rng);
    const std::vector<int32_t> expected = brute_force(tokens, min_n, max_n, k);
    ASSERT_EQ(lookup(tokens, min_n, max_n, k), expected) << "trial " << trial;
    proposals += !expected.empty();
  }
  EXPECT_GT(proposals, 1000);  // the comparison covered matches, not only misses
}

TEST(NgramProposer, FillsEveryRequestsDraft) {
  NgramProposer proposer(2, 3);
  const std::vector<int32_t> a = {1, 2, 3, 1, 2}, b = {5, 6, 7};
  std::vector<int32_t> da = {99}, db = {99};
  const std::vector<DraftRequest> requests = {{1, a, 4, &da}, {2, b, 4, &db}};
  proposer.propose(requests);
  EXPECT_EQ(da, (std::vector<int32_t>{3, 1, 2, 3}));
  EXPECT_TRUE(db.empty());
}

}  // namespace
}  // namespace lumen::spec
