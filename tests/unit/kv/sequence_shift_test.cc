// SequenceBlocks::shift (context shift): dropped blocks are released, later ones move down with
// no copy unless shared, published ones held only here are unpublished, and nothing moved is
// published again; a failed shift changes nothing.
#include <gtest/gtest.h>

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

TEST(SequenceShift, DropsBlocksAndMovesTheRestDownWithoutCopies) {
  BlockPool pool(16, 4);
  SequenceBlocks seq(pool);
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> tokens = iota_tokens(26);
  ASSERT_TRUE(seq.reserve(0, 26, copies));
  seq.commit(tokens, 26);  // 6 full blocks published, the 7th partly filled
  const std::vector<BlockId> before = table(seq);
  EXPECT_EQ(pool.n_cached(), 6);

  const auto moved = seq.shift(1, 3, copies);
  ASSERT_TRUE(moved.has_value());
  EXPECT_TRUE(copies.empty());  // nothing shared: the moved blocks are rewritten in place
  EXPECT_EQ(table(seq), (std::vector<BlockId>{before[0], before[4], before[5], before[6]}));
  EXPECT_EQ(*moved, (std::vector<BlockId>{before[4], before[5], before[6]}));
  // The moved blocks left the prefix cache; the kept one and the dropped ones (now evictable)
  // stay findable.
  EXPECT_TRUE(pool.is_published(before[0]));
  EXPECT_FALSE(pool.is_published(before[4]));
  EXPECT_FALSE(pool.is_published(before[5]));
  EXPECT_EQ(pool.n_used(), 4);
  EXPECT_EQ(seq.n_committed_blocks(), 1);

  // The moved blocks, and those after them, are never published again.
  std::vector<int32_t> shifted(tokens.begin(), tokens.begin() + 4);
  shifted.insert(shifted.end(), tokens.begin() + 16, tokens.end());
  for (int i = 0; i < 10; ++i) shifted.push_back(900 + i);  // 20 tokens: 5 full blocks
  ASSERT_TRUE(seq.reserve(10, 10, copies));
  seq.commit(shifted, 20);
  for (size_t i = 1; i < 5; ++i) EXPECT_FALSE(pool.is_published(seq.table()[i])) << i;
  pool.check_consistency();
}

TEST(SequenceShift, SharedBlocksAreCopiedBeforeTheyAreRotated) {
  BlockPool pool(16, 4);
  SequenceBlocks seq(pool);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(seq.reserve(0, 20, copies));
  seq.commit(iota_tokens(20), 20);
  SequenceBlocks sibling = seq.fork();  // every block shared
  const std::vector<BlockId> before = table(seq);
  const auto moved = seq.shift(0, 2, copies);
  ASSERT_TRUE(moved.has_value());
  ASSERT_EQ(copies.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(copies[i].src, before[2 + i]);
    EXPECT_EQ(copies[i].dst, (*moved)[i]);
    EXPECT_EQ(pool.ref_count(copies[i].dst), 1);
  }
  EXPECT_EQ(table(sibling), before);  // the sibling's K/V is untouched
  pool.check_consistency();
}

TEST(SequenceShift, AFailedShiftChangesNothing) {
  BlockPool pool(6, 4);
  SequenceBlocks seq(pool);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(seq.reserve(0, 12, copies));
  SequenceBlocks sibling = seq.fork();
  const std::vector<BlockId> before = table(seq);
  // Dropping block 0 frees nothing (the sibling holds it); moving 1 and 2 needs two copies,
  // and 3 blocks are free: fits. Taking two of them away first makes it fail.
  std::optional<BlockId> a = pool.allocate(), b = pool.allocate();
  EXPECT_FALSE(seq.shift(0, 1, copies).has_value());
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(table(seq), before);
  pool.release(*a);
  pool.release(*b);
  EXPECT_TRUE(seq.shift(0, 1, copies).has_value());
  EXPECT_THROW(seq.shift(0, 0, copies), Error);
  EXPECT_THROW(seq.shift(1, 5, copies), Error);
  pool.check_consistency();
}

TEST(SequenceShift, ARecomputedSequencePublishesAgain) {
  BlockPool pool(16, 4);
  SequenceBlocks seq(pool);
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(seq.reserve(0, 16, copies));
  seq.commit(iota_tokens(16), 16);
  ASSERT_TRUE(seq.shift(0, 2, copies).has_value());
  seq.release_all();  // preempted: recomputed from its tokens, adopting what is cached
  const std::vector<int32_t> tokens = iota_tokens(8, 108);
  EXPECT_EQ(seq.adopt_cached_prefix(tokens, 7), 0);
  ASSERT_TRUE(seq.reserve(0, 8, copies));
  seq.commit(tokens, 8);
  EXPECT_TRUE(pool.is_published(seq.table()[0]));
  EXPECT_TRUE(pool.is_published(seq.table()[1]));
}

}  // namespace
}  // namespace lumen::kv
