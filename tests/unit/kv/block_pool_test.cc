// BlockPool without the prefix cache: allocation, reference counts, list order, misuse.
#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "util/error.h"

namespace lumen::kv {
namespace {

TEST(BlockPool, AllocatesEveryBlockOnceThenNothing) {
  BlockPool pool(4, 16);
  EXPECT_EQ(pool.n_blocks(), 4);
  EXPECT_EQ(pool.block_size(), 16);
  for (BlockId expected = 0; expected < 4; ++expected) {
    EXPECT_EQ(pool.n_available(), 4 - expected);
    const auto id = pool.allocate();
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(*id, expected);  // a fresh pool hands out ascending ids
    EXPECT_EQ(pool.ref_count(*id), 1);
    EXPECT_EQ(pool.n_used(), expected + 1);
  }
  EXPECT_EQ(pool.n_available(), 0);
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_FALSE(pool.allocate().has_value());
  pool.check_consistency();
}

TEST(BlockPool, ReleasedBlocksAreReusedMostRecentFirst) {
  BlockPool pool(4, 4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(pool.allocate());
  pool.release(1);
  pool.release(3);
  pool.release(0);
  EXPECT_EQ(pool.n_available(), 3);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 3);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_FALSE(pool.allocate());
  pool.check_consistency();
}

TEST(BlockPool, SharedBlockIsFreedByTheLastRelease) {
  BlockPool pool(2, 4);
  const BlockId id = *pool.allocate();
  pool.retain(id);
  pool.retain(id);
  EXPECT_EQ(pool.ref_count(id), 3);
  pool.release(id);
  pool.release(id);
  EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.n_used(), 1);
  EXPECT_EQ(pool.n_available(), 1);
  pool.release(id);
  EXPECT_EQ(pool.ref_count(id), 0);
  EXPECT_EQ(pool.n_used(), 0);
  EXPECT_EQ(pool.n_available(), 2);
  pool.check_consistency();
}

TEST(BlockPool, MisuseFailsAndLeavesStateIntact) {
  BlockPool pool(3, 4);
  const BlockId held = *pool.allocate();
  EXPECT_THROW(pool.release(2), Error);  // free block
  EXPECT_THROW(pool.retain(2), Error);   // free, uncached block: allocate() it instead
  EXPECT_THROW(pool.retain(3), Error);   // not in the pool
  EXPECT_THROW(pool.retain(-1), Error);
  EXPECT_THROW(pool.release(7), Error);
  EXPECT_THROW(pool.ref_count(3), Error);
  pool.release(held);
  EXPECT_THROW(pool.release(held), Error);  // double release
  EXPECT_EQ(pool.n_available(), 3);
  EXPECT_EQ(pool.n_used(), 0);
  pool.check_consistency();
}

TEST(BlockPool, RejectsBadGeometry) {
  EXPECT_THROW(BlockPool(0, 16), Error);
  EXPECT_THROW(BlockPool(4, 0), Error);
  EXPECT_THROW(BlockPool(-1, 16), Error);
}

}  // namespace
}  // namespace lumen::kv
