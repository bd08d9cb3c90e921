// The state prefix cache's bookkeeping (engine/state_snapshots.h): the deepest stored prefix
// wins, no deeper than asked; a hit must equal the stored tokens and salt; the least recently
// used snapshot goes first when the cache is full.
#include "engine/state_snapshots.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace lumen::engine {
namespace {

std::vector<int32_t> tokens(int n, int first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(StateSnapshots, TheDeepestStoredPrefixWithinTheLimit) {
  StateSnapshots cache(4, 16, 4);
  const std::vector<int32_t> t = tokens(14);
  const int32_t at4 = *cache.insert(std::span(t).first(4), 0);
  const int32_t at8 = *cache.insert(std::span(t).first(8), 0);
  EXPECT_NE(at4, at8);
  std::optional<StateSnapshots::Hit> hit = cache.find_deepest(t, 0, 13);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->n_tokens, 8);
  EXPECT_EQ(hit->entry, at8);
  hit = cache.find_deepest(t, 0, 7);  // the 8-token snapshot is too deep
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->n_tokens, 4);
  EXPECT_FALSE(cache.find_deepest(t, 0, 3));
  EXPECT_EQ(cache.counters().queries, 3u);
  EXPECT_EQ(cache.counters().hits, 2u);
  EXPECT_EQ(cache.counters().hit_tokens, 12u);
}

TEST(StateSnapshots, OtherTokensOrAnotherSaltMiss) {
  StateSnapshots cache(2, 8, 4);
  const std::vector<int32_t> t = tokens(9);
  ASSERT_TRUE(cache.insert(std::span(t).first(8), 7));
  EXPECT_FALSE(cache.find_deepest(t, 8, 9)) << "another tenant's salt";
  std::vector<int32_t> other = t;
  other[5] = 1;  // the second block differs: only the first could match, and it is not stored
  EXPECT_FALSE(cache.find_deepest(other, 7, 9));
  EXPECT_TRUE(cache.find_deepest(t, 7, 9));
  // Storing the same prefix again refreshes it, taking no entry.
  EXPECT_FALSE(cache.insert(std::span(t).first(8), 7));
  EXPECT_EQ(cache.n_used(), 1);
}

TEST(StateSnapshots, TheLeastRecentlyUsedGoesFirst) {
  StateSnapshots cache(2, 8, 4);
  const std::vector<int32_t> a = tokens(4, 0), b = tokens(4, 10), c = tokens(4, 20);
  ASSERT_TRUE(cache.insert(a, 0));
  ASSERT_TRUE(cache.insert(b, 0));
  ASSERT_TRUE(cache.find_deepest(a, 0, 4));  // a is now the most recent: b goes
  ASSERT_TRUE(cache.insert(c, 0));
  EXPECT_TRUE(cache.find_deepest(a, 0, 4));
  EXPECT_FALSE(cache.find_deepest(b, 0, 4));
  EXPECT_TRUE(cache.find_deepest(c, 0, 4));
  EXPECT_EQ(cache.n_used(), 2);
  EXPECT_EQ(cache.counters().evictions, 1u);
  EXPECT_GE(cache.bytes(), 2u * 8u);
}

TEST(StateSnapshots, APrefixOfPartBlocksIsRefused) {
  StateSnapshots cache(2, 8, 4);
  const std::vector<int32_t> t = tokens(6);
  EXPECT_ANY_THROW(cache.insert(t, 0));
  EXPECT_ANY_THROW(StateSnapshots(0, 8, 4));
}

}  // namespace
}  // namespace lumen::engine
