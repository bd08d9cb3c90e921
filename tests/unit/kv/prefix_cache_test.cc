// BlockPool's prefix cache: publish, find, LRU eviction, dedup, collisions, counters.
#include <gtest/gtest.h>

#include <vector>

#include "kv/block_pool.h"
#include "util/error.h"

namespace lumen::kv {
namespace {

// A root block (no parent) with the given tokens, keyed by its real chain hash.
struct Key {
  std::vector<int32_t> tokens;
  uint64_t salt = 0;
  ContentId parent = kNoParent;
  BlockHash hash = 0;
  BlockKey get() const {
    return {hash ? hash : hash_block(kRootBlockHash, salt, tokens), parent, salt, tokens};
  }
};

// Allocates a block, publishes it under key and releases it: it is then cached and evictable.
ContentId cache_one(BlockPool& pool, const BlockKey& key, BlockId* id_out = nullptr) {
  const BlockId id = *pool.allocate();
  const ContentId content = pool.publish(id, key);
  pool.release(id);
  if (id_out) *id_out = id;
  return content;
}

TEST(PrefixCache, PublishedBlockIsFoundAfterRelease) {
  BlockPool pool(4, 2);
  const Key k{{5, 6}};
  BlockId id = -1;
  const ContentId c = cache_one(pool, k.get(), &id);
  EXPECT_NE(c, kNotCached);
  EXPECT_TRUE(pool.is_published(id));
  EXPECT_EQ(pool.n_available(), 4);  // evictable blocks count as available
  const auto hit = pool.find_cached(k.get());
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->id, id);
  EXPECT_EQ(hit->content, c);
  pool.retain(id);  // a prefix hit revives it from the LRU
  EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.n_available(), 3);
  EXPECT_EQ(pool.counters().queried_blocks, 1u);
  EXPECT_EQ(pool.counters().hit_blocks, 1u);
  EXPECT_FALSE(pool.find_cached(Key{{5, 7}}.get()));
  EXPECT_EQ(pool.counters().queried_blocks, 2u);
  EXPECT_EQ(pool.counters().hit_blocks, 1u);
  pool.check_consistency();
}

TEST(PrefixCache, FreeBlocksGoFirstThenLeastRecentlyReleasedCachedBlock) {
  BlockPool pool(4, 1);
  std::vector<BlockId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(*pool.allocate());
  for (int i = 0; i < 3; ++i) pool.publish(ids[i], Key{{i}}.get());
  // Release order sets the LRU order: 2, then 0, then 1 (3 is uncached: free list).
  pool.release(ids[2]);
  pool.release(ids[0]);
  pool.release(ids[3]);
  pool.release(ids[1]);
  EXPECT_EQ(pool.n_cached(), 3);
  EXPECT_EQ(pool.allocate(), ids[3]);  // the free block, no eviction
  EXPECT_EQ(pool.counters().evictions, 0u);
  EXPECT_EQ(pool.allocate(), ids[2]);
  EXPECT_EQ(pool.counters().evictions, 1u);
  EXPECT_FALSE(pool.is_published(ids[2]));
  EXPECT_FALSE(pool.find_cached(Key{{2}}.get()));  // its content is gone
  // A hit takes block 0 off the LRU; its release puts it at the most recent end, behind 1.
  pool.retain(pool.find_cached(Key{{0}}.get())->id);
  pool.release(ids[0]);
  EXPECT_EQ(pool.allocate(), ids[1]);
  EXPECT_EQ(pool.allocate(), ids[0]);
  EXPECT_EQ(pool.counters().evictions, 3u);
  EXPECT_EQ(pool.n_cached(), 0);
  EXPECT_FALSE(pool.allocate());
  pool.check_consistency();
}

TEST(PrefixCache, IdenticalContentKeepsTheFirstPublishedBlock) {
  BlockPool pool(4, 2);
  const Key k{{1, 2}};
  const BlockId a = *pool.allocate();
  const BlockId b = *pool.allocate();
  const ContentId ca = pool.publish(a, k.get());
  EXPECT_EQ(pool.publish(b, k.get()), ca);  // same content: b stays unpublished
  EXPECT_EQ(pool.publish(a, k.get()), ca);  // publishing again is harmless
  EXPECT_TRUE(pool.is_published(a));
  EXPECT_FALSE(pool.is_published(b));
  pool.release(b);
  EXPECT_EQ(pool.allocate(), b);  // b went to the free list
  pool.check_consistency();
}

TEST(PrefixCache, HashCollisionNeverShares) {
  BlockPool pool(4, 2);
  const BlockHash forced = 42;  // two different contents under one hash, as a collision would be
  const Key first{{1, 2}, 0, kNoParent, forced};
  const ContentId c = cache_one(pool, first.get());
  const BlockId other = *pool.allocate();
  EXPECT_EQ(pool.publish(other, Key{{1, 3}, 0, kNoParent, forced}.get()), kNotCached);
  EXPECT_FALSE(pool.is_published(other));
  EXPECT_FALSE(pool.find_cached(Key{{1, 3}, 0, kNoParent, forced}.get()));  // other tokens
  EXPECT_FALSE(pool.find_cached(Key{{1, 2}, 1, kNoParent, forced}.get()));  // other salt
  EXPECT_FALSE(pool.find_cached(Key{{1, 2}, 0, c, forced}.get()));          // other parent
  EXPECT_TRUE(pool.find_cached(first.get()));
  pool.check_consistency();
}

TEST(PrefixCache, PublishedBlocksAreImmutable) {
  BlockPool pool(2, 2);
  const BlockId id = *pool.allocate();
  pool.publish(id, Key{{1, 2}}.get());
  EXPECT_THROW(pool.publish(id, Key{{3, 4}}.get()), Error);
  EXPECT_THROW(pool.publish(1, Key{{3, 4}}.get()), Error);      // nobody holds block 1
  EXPECT_THROW(pool.publish(id, Key{{1, 2, 3}}.get()), Error);  // not a full block
  EXPECT_THROW(pool.find_cached(Key{{1}}.get()), Error);
  EXPECT_TRUE(pool.find_cached(Key{{1, 2}}.get()));
  pool.check_consistency();
}

TEST(PrefixCache, DisabledCacheIsANoOp) {
  BlockPool pool(2, 2, /*enable_prefix_caching=*/false);
  const BlockId id = *pool.allocate();
  EXPECT_EQ(pool.publish(id, Key{{1, 2}}.get()), kNotCached);
  EXPECT_FALSE(pool.is_published(id));
  EXPECT_FALSE(pool.find_cached(Key{{1, 2}}.get()));
  pool.release(id);
  EXPECT_EQ(pool.counters().queried_blocks, 0u);
  EXPECT_EQ(pool.counters().hit_blocks, 0u);
  EXPECT_EQ(pool.counters().evictions, 0u);
  pool.check_consistency();
}

}  // namespace
}  // namespace lumen::kv
