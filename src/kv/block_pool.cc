// BlockPool: reference counts and the free / evictable lists. The prefix cache half of the class
// is in block_pool_cache.cc, the consistency walk in block_pool_check.cc.
#include "kv/block_pool.h"

#include <algorithm>

#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::kv {

BlockPool::BlockPool(int32_t n_blocks, int32_t block_size, bool enable_prefix_caching)
    : n_blocks_(n_blocks),
      block_size_(block_size),
      prefix_caching_(enable_prefix_caching),
      index_(enable_prefix_caching ? std::max(n_blocks, 0) : 0) {  // n_blocks is checked below
  if (n_blocks <= 0) fail("kv: a block pool needs at least one block, got {}", n_blocks);
  if (block_size <= 0) fail("kv: block size must be positive, got {}", block_size);
  blocks_.resize(n_blocks);
  links_.resize(n_blocks);
  if (prefix_caching_) {
    const auto n_tokens = checked_mul(int64_t{n_blocks}, int64_t{block_size});
    if (!n_tokens) fail("kv: {} blocks of {} tokens overflow", n_blocks, block_size);
    tokens_.resize(static_cast<size_t>(*n_tokens));
  }
  // Ascending ids: a fresh pool hands out 0, 1, 2, ...
  for (BlockId id = 0; id < n_blocks; ++id) free_.push_back(links_, id);
}

void BlockPool::check_id(BlockId id, const char* what) const {
  if (id < 0 || id >= n_blocks_)
    fail("kv: {} of block {}, which is not in the pool (0..{})", what, id, n_blocks_ - 1);
}

std::optional<BlockId> BlockPool::allocate() {
  BlockId id;
  if (!free_.empty()) {
    id = free_.pop_front(links_);
  } else if (!evictable_.empty()) {
    id = evictable_.pop_front(links_);
    drop_content(id);
    ++counters_.evictions;
  } else {
    return std::nullopt;
  }
  blocks_[id].ref_count = 1;
  ++n_used_;
  return id;
}

void BlockPool::retain(BlockId id) {
  check_id(id, "retain");
  BlockState& b = blocks_[id];
  if (b.ref_count == 0) {
    // Only a cached block may come back from ref_count 0 without allocate(): a prefix hit.
    if (!b.published) fail("kv: retain of block {}, which is free (allocate it instead)", id);
    evictable_.remove(links_, id);
    ++n_used_;
  }
  ++b.ref_count;
}

void BlockPool::release(BlockId id) {
  check_id(id, "release");
  BlockState& b = blocks_[id];
  if (b.ref_count == 0) fail("kv: release of block {}, which nobody holds", id);
  if (--b.ref_count > 0) return;
  --n_used_;
  if (b.published)
    evictable_.push_back(links_, id);
  else
    free_.push_front(links_, id);
}

int32_t BlockPool::ref_count(BlockId id) const {
  check_id(id, "ref_count");
  return blocks_[id].ref_count;
}

bool BlockPool::is_published(BlockId id) const {
  check_id(id, "is_published");
  return blocks_[id].published;
}

}  // namespace lumen::kv
