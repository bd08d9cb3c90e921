// SequenceBlocks: reserve, copy-on-write, fork, truncate, adopt/commit, salt isolation.
#include "kv/sequence_blocks.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "util/error.h"

namespace lumen::kv {
namespace {

std::vector<int32_t> iota_tokens(int n, int32_t first = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Reserves and commits tokens[n_computed, n) as one step; returns the copies it asked for.
std::vector<BlockCopy> step(SequenceBlocks& seq, const std::vector<int32_t>& tokens, int64_t n_computed) {
  std::vector<BlockCopy> copies;
  const int64_t n = std::ssize(tokens) - n_computed;
  EXPECT_TRUE(seq.reserve(n_computed, n, copies));
  seq.commit(tokens, std::ssize(tokens));
  return copies;
}

std::vector<BlockId> table(const SequenceBlocks& seq) { return {seq.table().begin(), seq.table().end()}; }

TEST(SequenceBlocks, ReserveAllocatesWhatIsMissing) {
  BlockPool pool(8, 4);
  SequenceBlocks seq(pool);
  EXPECT_EQ(seq.blocks_needed(0, 0), 0);
  EXPECT_EQ(seq.blocks_needed(0, 1), 1);
  EXPECT_EQ(seq.blocks_needed(0, 9), 3);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(seq.reserve(0, 6, copies));
  EXPECT_EQ(table(seq), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(seq.blocks_needed(6, 2), 0);  // fits in block 1
  EXPECT_EQ(seq.blocks_needed(6, 3), 1);
  ASSERT_TRUE(seq.reserve(6, 3, copies));
  EXPECT_EQ(table(seq), (std::vector<BlockId>{0, 1, 2}));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(pool.n_used(), 3);
  EXPECT_THROW(seq.reserve(13, 1, copies), Error);  // past the blocks it holds: a hole
  EXPECT_THROW(seq.reserve(-1, 1, copies), Error);
}

TEST(SequenceBlocks, FailedReserveChangesNothing) {
  BlockPool pool(3, 4);
  SequenceBlocks seq(pool);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(seq.reserve(0, 5, copies));
  EXPECT_EQ(seq.blocks_needed(5, 8), 2);
  EXPECT_FALSE(seq.reserve(5, 8, copies));  // needs 2, 1 available
  EXPECT_EQ(seq.table().size(), 2u);
  EXPECT_EQ(pool.n_available(), 1);
  EXPECT_TRUE(copies.empty());
  EXPECT_TRUE(seq.reserve(5, 7, copies));
}

TEST(SequenceBlocks, ForkCopiesTheSharedPartialBlockOnWrite) {
  BlockPool pool(8, 4);
  SequenceBlocks parent(pool);
  const auto tokens = iota_tokens(6);
  step(parent, tokens, 0);  // blocks 0 (full) and 1 (2 of 4 rows)
  SequenceBlocks child = parent.fork();
  EXPECT_EQ(table(child), table(parent));
  EXPECT_EQ(pool.ref_count(0), 2);
  EXPECT_EQ(pool.ref_count(1), 2);

  // The child writes position 6: block 1 is shared and holds rows 4, 5 -> copy it.
  EXPECT_EQ(child.blocks_needed(6, 1), 1);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(child.reserve(6, 1, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, 1);
  EXPECT_EQ(copies[0].dst, 2);
  EXPECT_EQ(table(child), (std::vector<BlockId>{0, 2}));
  EXPECT_EQ(pool.ref_count(1), 1);
  EXPECT_EQ(pool.ref_count(0), 2);  // the full block stays shared

  // The parent now holds block 1 alone: it writes in place, no copy.
  EXPECT_EQ(parent.blocks_needed(6, 1), 0);
  copies.clear();
  ASSERT_TRUE(parent.reserve(6, 1, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(table(parent), (std::vector<BlockId>{0, 1}));
}

TEST(SequenceBlocks, SharedEmptyBlockIsReplacedWithoutCopy) {
  BlockPool pool(8, 4);
  SequenceBlocks parent(pool);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(parent.reserve(0, 8, copies));  // reserved ahead, nothing written yet
  SequenceBlocks child = parent.fork();
  EXPECT_EQ(child.blocks_needed(4, 4), 1);
  ASSERT_TRUE(child.reserve(4, 4, copies));
  EXPECT_TRUE(copies.empty());  // block 1 has no rows yet: nothing to copy
  EXPECT_EQ(table(child)[0], table(parent)[0]);
  EXPECT_NE(table(child)[1], table(parent)[1]);
}

TEST(SequenceBlocks, MoveAndDestructorRelease) {
  BlockPool pool(4, 4);
  {
    SequenceBlocks a(pool);
    std::vector<BlockCopy> copies;
    ASSERT_TRUE(a.reserve(0, 8, copies));
    SequenceBlocks b(std::move(a));
    EXPECT_TRUE(a.table().empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_EQ(b.table().size(), 2u);
    SequenceBlocks c(pool);
    ASSERT_TRUE(c.reserve(0, 1, copies));
    c = std::move(b);  // c's own block is released
    EXPECT_EQ(pool.n_used(), 2);
  }
  EXPECT_EQ(pool.n_used(), 0);
  EXPECT_EQ(pool.n_available(), 4);
}

TEST(SequenceBlocks, CommitPublishesFullBlocksAndAdoptReusesThem) {
  BlockPool pool(8, 4);
  const auto tokens = iota_tokens(10);
  SequenceBlocks first(pool);
  step(first, tokens, 0);
  EXPECT_EQ(first.n_committed_blocks(), 2);
  EXPECT_TRUE(pool.is_published(first.table()[0]));
  EXPECT_TRUE(pool.is_published(first.table()[1]));
  EXPECT_FALSE(pool.is_published(first.table()[2]));  // partial blocks are never published

  SequenceBlocks second(pool);
  EXPECT_EQ(second.adopt_cached_prefix(tokens, 10), 8);
  EXPECT_EQ(table(second), (std::vector<BlockId>{first.table()[0], first.table()[1]}));
  EXPECT_EQ(pool.ref_count(first.table()[0]), 2);
  EXPECT_EQ(pool.counters().queried_blocks, 2u);
  EXPECT_EQ(pool.counters().hit_blocks, 2u);
  // It continues after the adopted blocks with a block of its own.
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(second.reserve(8, 2, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_NE(second.table()[2], first.table()[2]);
  EXPECT_THROW(second.adopt_cached_prefix(tokens, 10), Error);  // not empty any more
  EXPECT_THROW(second.reserve(4, 1, copies), Error);            // would rewrite committed block 1
}

TEST(SequenceBlocks, AdoptRespectsMaxTokensAndStopsAtTheFirstMiss) {
  BlockPool pool(16, 4);
  auto tokens = iota_tokens(12);
  SequenceBlocks owner(pool);
  step(owner, tokens, 0);  // 3 cached blocks

  SequenceBlocks limited(pool);
  EXPECT_EQ(limited.adopt_cached_prefix(tokens, 11), 8);  // whole blocks within 11 tokens
  EXPECT_EQ(pool.counters().queried_blocks, 2u);
  limited.release_all();
  EXPECT_EQ(limited.adopt_cached_prefix(tokens, 3), 0);
  limited.release_all();

  // Block 1 differs: block 0 hits, block 1 misses, and block 2 (cached, same tokens) is not
  // even queried, because its key chains through block 1.
  auto other = tokens;
  other[5] = -3;
  const PrefixCacheCounters before = pool.counters();
  SequenceBlocks diverged(pool);
  EXPECT_EQ(diverged.adopt_cached_prefix(other, 12), 4);
  EXPECT_EQ(pool.counters().queried_blocks - before.queried_blocks, 2u);
  EXPECT_EQ(pool.counters().hit_blocks - before.hit_blocks, 1u);

  // Same blocks 1 and 2 under a different first block: nothing is found.
  auto head = tokens;
  head[0] = -1;
  SequenceBlocks headless(pool);
  EXPECT_EQ(headless.adopt_cached_prefix(head, 12), 0);
}

TEST(SequenceBlocks, DifferentSaltsNeverShare) {
  BlockPool pool(16, 4);
  const auto tokens = iota_tokens(8);
  SequenceBlocks tenant_a(pool, /*cache_salt=*/1);
  step(tenant_a, tokens, 0);
  SequenceBlocks tenant_b(pool, /*cache_salt=*/2);
  EXPECT_EQ(tenant_b.adopt_cached_prefix(tokens, 8), 0);
  step(tenant_b, tokens, 0);  // publishes its own copies
  EXPECT_TRUE(pool.is_published(tenant_b.table()[0]));
  EXPECT_NE(tenant_b.table()[0], tenant_a.table()[0]);
  SequenceBlocks again_a(pool, 1);
  EXPECT_EQ(again_a.adopt_cached_prefix(tokens, 8), 8);
  EXPECT_EQ(table(again_a), table(tenant_a));
  SequenceBlocks unsalted(pool);
  EXPECT_EQ(unsalted.adopt_cached_prefix(tokens, 8), 0);
}

TEST(SequenceBlocks, TruncateReleasesTheTailAndCopiesACutPublishedBlock) {
  BlockPool pool(8, 4);
  const auto tokens = iota_tokens(12);
  SequenceBlocks seq(pool);
  step(seq, tokens, 0);
  const auto before = table(seq);
  seq.truncate(6);  // keeps blocks 0 and 1 (cut in the middle)
  EXPECT_EQ(table(seq), (std::vector<BlockId>{before[0], before[1]}));
  EXPECT_EQ(seq.n_committed_blocks(), 1);
  EXPECT_TRUE(pool.is_published(before[2]));  // released, still cached
  EXPECT_EQ(pool.ref_count(before[2]), 0);
  // Rewriting position 6 must not touch published block 1, which others may adopt: copy it.
  std::vector<BlockCopy> copies;
  EXPECT_EQ(seq.blocks_needed(6, 1), 1);
  ASSERT_TRUE(seq.reserve(6, 1, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, before[1]);
  EXPECT_EQ(copies[0].dst, seq.table()[1]);
  EXPECT_NE(seq.table()[1], before[1]);
  EXPECT_TRUE(pool.is_published(before[1]));  // the cached content survives

  seq.truncate(100);  // beyond its blocks: nothing to release
  EXPECT_EQ(seq.table().size(), 2u);
  seq.truncate(4);  // on a block boundary: block 0 stays committed
  EXPECT_EQ(seq.table().size(), 1u);
  EXPECT_EQ(seq.n_committed_blocks(), 1);
  seq.truncate(0);
  EXPECT_TRUE(seq.table().empty());
  EXPECT_EQ(pool.n_used(), 0);
  EXPECT_THROW(seq.truncate(-1), Error);
}

TEST(SequenceBlocks, ReleaseAllPutsTheTailFirstInLineForEviction) {
  BlockPool pool(3, 2);
  const auto tokens = iota_tokens(6);
  SequenceBlocks seq(pool);
  step(seq, tokens, 0);
  const auto blocks = table(seq);
  seq.release_all();
  EXPECT_EQ(pool.n_cached(), 3);
  EXPECT_EQ(pool.allocate(), blocks[2]);
  EXPECT_EQ(pool.allocate(), blocks[1]);
  SequenceBlocks again(pool);
  EXPECT_EQ(again.adopt_cached_prefix(tokens, 6), 2);  // the head survived
}

// Two forks share full blocks s0, s1 before either commits. The first to commit finds s0's
// content already cached in another block a0, so s0 stays unpublished and s1 is published under
// a0's content. Then a0 is evicted; the second fork publishes s0 itself, and s1 must be relinked
// to it, or the cached s1 could never be found again.
TEST(SequenceBlocks, SiblingCommitRelinksABlockWhoseParentWasEvicted) {
  BlockPool pool(4, 2);
  const std::vector<int32_t> tokens = {1, 2, 3, 4};
  const std::vector<int32_t> head = {1, 2};
  SequenceBlocks a(pool);
  step(a, head, 0);
  const BlockId a0 = a.table()[0];
  SequenceBlocks s(pool);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(s.reserve(0, 4, copies));
  SequenceBlocks sibling = s.fork();
  s.commit(tokens, 4);
  const BlockId s0 = s.table()[0], s1 = s.table()[1];
  EXPECT_FALSE(pool.is_published(s0));
  EXPECT_TRUE(pool.is_published(s1));
  a.release_all();
  EXPECT_EQ(pool.allocate(), 3);   // the last free block
  EXPECT_EQ(pool.allocate(), a0);  // evicts a0
  EXPECT_EQ(pool.counters().evictions, 1u);
  sibling.commit(tokens, 4);
  EXPECT_TRUE(pool.is_published(s0));
  SequenceBlocks probe(pool);
  EXPECT_EQ(probe.adopt_cached_prefix(tokens, 4), 4);
  EXPECT_EQ(table(probe), (std::vector<BlockId>{s0, s1}));
}

TEST(SequenceBlocks, NoCachingMeansNoSharing) {
  BlockPool pool(8, 4, /*enable_prefix_caching=*/false);
  const auto tokens = iota_tokens(8);
  SequenceBlocks a(pool);
  step(a, tokens, 0);
  SequenceBlocks b(pool);
  EXPECT_EQ(b.adopt_cached_prefix(tokens, 8), 0);
  EXPECT_EQ(pool.counters().queried_blocks, 0u);
  a.release_all();
  EXPECT_EQ(pool.n_available(), 8);
  EXPECT_EQ(pool.n_cached(), 0);
}

TEST(SequenceBlocks, CommitChecksItsArguments) {
  BlockPool pool(4, 4);
  SequenceBlocks seq(pool);
  const auto tokens = iota_tokens(8);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(seq.reserve(0, 4, copies));
  EXPECT_THROW(seq.commit(tokens, 8), Error);  // block 1 was never reserved
  EXPECT_THROW(seq.commit(tokens, 9), Error);  // more computed than known tokens
  EXPECT_THROW(seq.commit(tokens, -1), Error);
  seq.commit(tokens, 4);
  EXPECT_EQ(seq.n_committed_blocks(), 1);
}

}  // namespace
}  // namespace lumen::kv
