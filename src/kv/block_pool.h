#pragma once
// The pool of KV cache blocks: who holds each block (reference counts), which blocks can be
// handed out, and the prefix cache that lets a new sequence reuse the K/V of full blocks another
// sequence computed. Bookkeeping only: the bytes live in the model's KV cache, indexed by BlockId.
//
// A block is in exactly one state:
//   in use      ref_count > 0 (held by sequences; maybe also published in the prefix cache)
//   evictable   ref_count == 0, published: content kept and findable, on the LRU list
//   free        ref_count == 0, no content, on the free list
// allocate() takes a free block first, and only then evicts the least recently released
// evictable block, so cached prefixes survive as long as there is any other room.
// Not thread-safe: one engine loop owns the pool and every SequenceBlocks on it.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kv/block_hash.h"
#include "kv/block_hash_table.h"
#include "kv/block_list.h"

namespace lumen::kv {

using BlockId = int32_t;

// Names one published block content for the pool's lifetime: serials are never reused, so a
// child block that names its parent's ContentId names exactly that content, even after the
// parent was evicted and its block reused (the child then simply becomes unreachable). The block
// makes "is that content still cached?" an O(1) question.
struct ContentId {
  uint64_t serial = 0;  // 0: no content (the parent of a sequence's first block)
  BlockId block = -1;   // the block it was published in
  bool operator==(const ContentId&) const = default;
};
inline constexpr ContentId kNoParent{};
inline constexpr ContentId kNotCached{~uint64_t{0}, -1};  // a content publish() could not index

// Copy-on-write: the K/V rows of src must be copied to dst (all layers) before the step writes.
// Apply the copies in the order given, all before the step writes any K/V. Within one reserve()
// a source is never handed out again, but within one step it can be: a source released to the
// pool (by the reserve() that copied it, or by its other holders being preempted) may become a
// later copy's destination. In order, that is harmless; run in parallel, it would not be.
struct BlockCopy {
  BlockId src;
  BlockId dst;
};

struct PrefixCacheCounters {
  uint64_t queried_blocks = 0;  // full blocks looked up in the prefix cache
  uint64_t hit_blocks = 0;      // of those, found
  uint64_t evictions = 0;       // cached blocks whose content was dropped to reuse the block
};

// A full block's content as the prefix cache identifies it. The hash is only the index key; a
// match also needs the same parent content, salt and tokens, so a 64-bit collision can never
// make two different prefixes share K/V.
struct BlockKey {
  BlockHash hash = 0;            // hash_block(parent's hash, salt, tokens)
  ContentId parent = kNoParent;  // the parent block's ContentId
  uint64_t salt = 0;
  std::span<const int32_t> tokens;  // exactly block_size tokens
};

struct CachedBlock {
  BlockId id;
  ContentId content;
};

class BlockPool {
 public:
  BlockPool(int32_t n_blocks, int32_t block_size, bool enable_prefix_caching = true);
  BlockPool(const BlockPool&) = delete;  // sequences hold a pointer to their pool
  BlockPool& operator=(const BlockPool&) = delete;

  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }
  int32_t n_available() const { return free_.size() + evictable_.size(); }
  int32_t n_used() const { return n_used_; }
  int32_t n_cached() const { return index_.size(); }  // published blocks, in use or evictable

  // O(1), never allocates memory. ref_count 1. nullopt when every block is in use.
  std::optional<BlockId> allocate();
  // ref_count++. A block with ref_count 0 may be retained only if it is cached (a prefix hit).
  void retain(BlockId id);
  // ref_count--; at 0 a cached block goes to the LRU tail (still findable), others to the front
  // of the free list (reused first: its rows are the likeliest to still be in a CPU cache).
  void release(BlockId id);
  int32_t ref_count(BlockId id) const;
  bool is_published(BlockId id) const;
  const PrefixCacheCounters& counters() const { return counters_; }

  // The cached block holding exactly this content, or nullopt. Counts one query (and one hit).
  // Does not retain: the caller retains the block if it uses it. No-op when caching is off.
  std::optional<CachedBlock> find_cached(const BlockKey& key);
  // The same lookup, not counted (a second group's block for a prefix already counted once).
  std::optional<CachedBlock> peek_cached(const BlockKey& key) const;
  // Publishes the content of block id (held by the caller, its K/V fully written) under key, and
  // returns the ContentId that now names this content: the block's own, or that of an already
  // published block with identical content (this block then stays unpublished). kNotCached when
  // a different content already holds this hash (a collision) or caching is off.
  ContentId publish(BlockId id, const BlockKey& key);
  // Drops a block's published content (it stays in use, unfindable): its holder is about to
  // rewrite it. Only for a block no one else holds (ref_count 1).
  void unpublish(BlockId id);
  // Whether content is still cached (kNoParent counts as cached: the root always exists).
  bool is_live(ContentId content) const;

  // Walks every list and the index and fails (lumen::Error) on any inconsistency. O(n_blocks);
  // for tests and debugging.
  void check_consistency() const;

 private:
  struct BlockState {
    int32_t ref_count = 0;
    bool published = false;
    BlockHash hash = 0;
    ContentId content = kNoParent;
    ContentId parent = kNoParent;
    uint64_t salt = 0;
  };
  void check_id(BlockId id, const char* what) const;
  bool holds(BlockId id, const BlockKey& key) const;         // the exact content of key
  bool holds_tokens(BlockId id, const BlockKey& key) const;  // the same, any parent
  std::span<const int32_t> tokens_of(BlockId id) const;
  void drop_content(BlockId id);

  int32_t n_blocks_;
  int32_t block_size_;
  bool prefix_caching_;
  int32_t n_used_ = 0;
  std::vector<BlockState> blocks_;
  std::vector<BlockLinks> links_;
  std::vector<int32_t> tokens_;  // block_size per block; meaningful while the block is published
  BlockList free_;
  BlockList evictable_;  // front: least recently released
  BlockHashTable index_;
  uint64_t next_serial_ = 1;
  PrefixCacheCounters counters_;
};

}  // namespace lumen::kv
