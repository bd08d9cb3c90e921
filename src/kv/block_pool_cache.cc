// BlockPool's prefix cache: publishing full blocks and finding them again. Blocks are indexed by
// their chain hash; a match is confirmed against the stored parent ContentId, salt and tokens.
#include <algorithm>

#include "kv/block_pool.h"
#include "util/error.h"

namespace lumen::kv {

std::span<const int32_t> BlockPool::tokens_of(BlockId id) const {
  return std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(id) * block_size_, block_size_);
}

bool BlockPool::holds_tokens(BlockId id, const BlockKey& key) const {
  const BlockState& b = blocks_[id];
  return b.published && b.hash == key.hash && b.salt == key.salt &&
         std::ranges::equal(tokens_of(id), key.tokens);
}

bool BlockPool::holds(BlockId id, const BlockKey& key) const {
  return holds_tokens(id, key) && blocks_[id].parent == key.parent;
}

bool BlockPool::is_live(ContentId content) const {
  if (content == kNoParent) return true;
  if (content.block < 0 || content.block >= n_blocks_) return false;
  const BlockState& b = blocks_[content.block];
  return b.published && b.content == content;
}

void BlockPool::drop_content(BlockId id) {
  BlockState& b = blocks_[id];
  if (!b.published) return;
  index_.erase(b.hash);
  b.published = false;
}

void BlockPool::unpublish(BlockId id) {
  check_id(id, "unpublish");
  if (blocks_[id].ref_count != 1) fail("kv: unpublish of block {}, held {} times", id, blocks_[id].ref_count);
  drop_content(id);
}

std::optional<CachedBlock> BlockPool::peek_cached(const BlockKey& key) const {
  if (!prefix_caching_) return std::nullopt;
  if (std::ssize(key.tokens) != block_size_) {
    fail("kv: prefix lookup of {} tokens, but blocks hold {}", key.tokens.size(), block_size_);
  }
  const BlockId id = index_.find(key.hash);
  if (id < 0 || !holds(id, key)) return std::nullopt;
  return CachedBlock{id, blocks_[id].content};
}

std::optional<CachedBlock> BlockPool::find_cached(const BlockKey& key) {
  std::optional<CachedBlock> hit = peek_cached(key);
  if (!prefix_caching_) return hit;
  ++counters_.queried_blocks;
  if (hit) ++counters_.hit_blocks;
  return hit;
}

ContentId BlockPool::publish(BlockId id, const BlockKey& key) {
  check_id(id, "publish");
  if (!prefix_caching_) return kNotCached;
  if (blocks_[id].ref_count == 0) fail("kv: publish of block {}, which nobody holds", id);
  if (std::ssize(key.tokens) != block_size_) {
    fail("kv: publish of {} tokens, but blocks hold {}", key.tokens.size(), block_size_);
  }
  const BlockId existing = index_.find(key.hash);
  if (existing >= 0 && holds(existing, key)) return blocks_[existing].content;
  BlockState& b = blocks_[id];
  if (b.published) {
    // Forks sharing this block can name its parent differently: one published it under parent
    // content P; P was evicted, and a sibling published the same parent tokens anew as P'. The
    // tokens before this block are the same for both (they share it), so it is the same content;
    // relinking it to the live parent keeps it reachable.
    if (holds_tokens(id, key)) {
      if (!is_live(b.parent) && is_live(key.parent)) b.parent = key.parent;
      return b.content;
    }
    // A published block is immutable: its K/V may be read by any sequence that finds it.
    fail("kv: block {} is already published with other content", id);
  }
  if (existing >= 0) return kNotCached;  // same hash, different content: keep the first one
  b.published = true;
  b.hash = key.hash;
  b.content = {next_serial_++, id};
  b.parent = key.parent;
  b.salt = key.salt;
  std::ranges::copy(key.tokens, tokens_.begin() + static_cast<ptrdiff_t>(id) * block_size_);
  index_.insert(key.hash, id);
  return b.content;
}

}  // namespace lumen::kv
