// SequenceBlocks::compact (importance-based eviction): the kept positions' blocks stay at the
// front of the table, the rest are released, a kept block shared with another sequence is
// replaced by a fresh one, and nothing of the compacted sequence is published again, so the
// prefix cache never hands its blocks to a request expecting the full prefix.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kv/sequence_blocks.h"
#include "util/error.h"

namespace lumen::kv {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t first = 100) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<BlockId> table(const SequenceBlocks& seq) { return {seq.table().begin(), seq.table().end()}; }

TEST(SequenceCompact, InAFullPoolRewritesInPlaceReleasesTheRestAndPublishesNothingAgain) {
  BlockPool pool(7, 4);  // exactly the sequence's blocks: no room for fresh ones
  SequenceBlocks seq(pool);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> tokens = iota_tokens(26);
  ASSERT_TRUE(seq.reserve(0, 26, copies));
  seq.commit(tokens, 26);  // 6 full blocks published, the 7th partly filled
  const std::vector<BlockId> before = table(seq);

  const auto c = seq.compact(10);  // 10 positions: 3 blocks
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->src, before);
  EXPECT_EQ(c->dst, (std::vector<BlockId>{before[0], before[1], before[2]}));
  EXPECT_EQ(table(seq), c->dst);
  EXPECT_EQ(pool.n_used(), 3);
  // Rewritten in place: out of the prefix cache. The released full blocks keep their content
  // (nothing writes them but the gather's reads), so they stay findable for the true prefix.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(pool.is_published(before[static_cast<size_t>(i)]));
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(pool.is_published(before[static_cast<size_t>(i)]));
  EXPECT_EQ(seq.n_committed_blocks(), 0);

  // Filling on: no block of the compacted sequence is published, whatever its tokens say.
  std::vector<int32_t> now(tokens.begin(), tokens.begin() + 10);
  for (int i = 0; i < 14; ++i) now.push_back(500 + i);
  ASSERT_TRUE(seq.reserve(10, 14, copies));
  EXPECT_TRUE(copies.empty());
  seq.commit(now, 24);
  for (BlockId b : seq.table()) EXPECT_FALSE(pool.is_published(b));

  // A request with the original prompt finds none of it: the chain starts at the rewritten block 0.
  SequenceBlocks other(pool);
  EXPECT_EQ(other.adopt_cached_prefix(tokens, 26), 0);
  // And one with the compacted sequence's token list finds nothing either.
  SequenceBlocks third(pool);
  EXPECT_EQ(third.adopt_cached_prefix(now, 24), 0);
}

TEST(SequenceCompact, WithRoomThePublishedBlocksStayInThePrefixCache) {
  BlockPool pool(16, 4);
  SequenceBlocks seq(pool);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> tokens = iota_tokens(26);
  ASSERT_TRUE(seq.reserve(0, 26, copies));
  seq.commit(tokens, 26);
  const std::vector<BlockId> before = table(seq);
  const auto c = seq.compact(10);
  ASSERT_TRUE(c.has_value());
  for (BlockId b : c->dst) EXPECT_EQ(std::count(before.begin(), before.end(), b), 0) << b;
  EXPECT_EQ(pool.n_used(), 3);
  SequenceBlocks next(pool);
  EXPECT_EQ(next.adopt_cached_prefix(tokens, 26), 24);
  EXPECT_EQ(table(next), std::vector<BlockId>(before.begin(), before.begin() + 6));
}

TEST(SequenceCompact, ASharedBlockIsReplacedAndTheSharerKeepsItsContent) {
  BlockPool pool(16, 4);
  SequenceBlocks first(pool);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> tokens = iota_tokens(17);
  ASSERT_TRUE(first.reserve(0, 17, copies));
  first.commit(tokens, 17);
  SequenceBlocks seq(pool);
  ASSERT_EQ(seq.adopt_cached_prefix(tokens, 16), 16);  // shares the 4 full blocks
  ASSERT_TRUE(seq.reserve(16, 1, copies));
  seq.commit(tokens, 17);
  const std::vector<BlockId> shared = table(first);

  const auto c = seq.compact(8);
  ASSERT_TRUE(c.has_value());
  ASSERT_EQ(c->dst.size(), 2u);
  // Both kept blocks were shared: fresh ones, never the sharer's.
  EXPECT_NE(c->dst[0], shared[0]);
  EXPECT_NE(c->dst[1], shared[1]);
  EXPECT_EQ(c->src[0], shared[0]);
  for (BlockId b : shared) EXPECT_TRUE(pool.ref_count(b) >= 1);
  EXPECT_TRUE(pool.is_published(shared[0]));
  // The full prefix is still there for the next request, in the first sequence's blocks.
  SequenceBlocks next(pool);
  EXPECT_EQ(next.adopt_cached_prefix(tokens, 16), 16);
  EXPECT_EQ(table(next), (std::vector<BlockId>{shared[0], shared[1], shared[2], shared[3]}));
}

TEST(SequenceCompact, WithoutRoomForFreshBlocksNothingChanges) {
  BlockPool pool(4, 4);
  SequenceBlocks first(pool);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> tokens = iota_tokens(8);
  ASSERT_TRUE(first.reserve(0, 8, copies));
  first.commit(tokens, 8);
  SequenceBlocks seq = first.fork();
  ASSERT_TRUE(seq.reserve(8, 8, copies));  // the pool is now full
  const std::vector<BlockId> before = table(seq);
  EXPECT_FALSE(seq.compact(8).has_value());
  EXPECT_EQ(table(seq), before);
  EXPECT_THROW(seq.compact(0), Error);
  EXPECT_THROW(seq.compact(17), Error);
}

}  // namespace
}  // namespace lumen::kv
