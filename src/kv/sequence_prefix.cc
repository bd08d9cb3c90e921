// SequenceBlocks and the prefix cache: adopting cached blocks for a new prompt, and publishing
// blocks as they fill. Block i's key chains through block i-1's hash and ContentId, so a match
// at block i implies the whole prefix [0, (i+1) * block_size) matches.
#include <algorithm>

#include "kv/sequence_blocks.h"
#include "util/error.h"

namespace lumen::kv {

void SequenceBlocks::salt_blocks(std::vector<BlockSalt> salts) {
  if (!table_.empty()) fail("kv: salt_blocks on a sequence that already holds {} blocks", table_.size());
  for (size_t i = 1; i < salts.size(); ++i) {
    if (salts[i].block <= salts[i - 1].block) fail("kv: block salts out of order at block {}", salts[i].block);
  }
  block_salts_ = std::move(salts);
}

uint64_t SequenceBlocks::salt_of(size_t index) const {
  const auto it = std::lower_bound(block_salts_.begin(), block_salts_.end(), index,
                                   [](const BlockSalt& s, size_t block) { return s.block < block; });
  if (it == block_salts_.end() || it->block != index) return salt_;
  return mix64(salt_ ^ mix64(it->salt ^ 0x696d6167652d6b76ULL));  // "image-kv"
}

SequenceBlocks::ChainLink SequenceBlocks::parent_of(size_t index) const {
  return index == 0 ? ChainLink{kRootBlockHash, kNoParent} : chain_[index - 1];
}

int64_t SequenceBlocks::adopt_cached_prefix(std::span<const int32_t> tokens, int64_t max_tokens, bool counted) {
  if (!table_.empty())
    fail("kv: adopt_cached_prefix on a sequence that already holds {} blocks", table_.size());
  if (max_tokens < 0) fail("kv: adopt_cached_prefix with max_tokens {}", max_tokens);
  // A sequence that starts over (a recompute after a context shift) computes its K/V from its
  // tokens alone: publishable again. One that comes back from swap keeps its shifted K/V and
  // does not come through here.
  unpublishable_from_ = SIZE_MAX;
  if (!pool_->prefix_caching()) return 0;
  const size_t bs = static_cast<size_t>(pool_->block_size());
  const size_t n_full = std::min<size_t>(tokens.size(), static_cast<size_t>(max_tokens)) / bs;
  for (size_t i = 0; i < n_full; ++i) {
    const ChainLink parent = parent_of(i);
    const auto block_tokens = tokens.subspan(i * bs, bs);
    const uint64_t salt = salt_of(i);
    const BlockHash hash = hash_block(parent.hash, salt, block_tokens);
    const BlockKey key{hash, parent.content, salt, block_tokens};
    const auto hit = counted ? pool_->find_cached(key) : pool_->peek_cached(key);
    if (!hit) break;
    pool_->retain(hit->id);
    table_.push_back(hit->id);
    chain_.push_back({hash, hit->content});
  }
  return static_cast<int64_t>(table_.size() * bs);
}

std::optional<CachedBlock> SequenceBlocks::find_keyed(std::span<const ChainLink> anchor, std::span<const int32_t> tokens,
                                                  size_t index) const {
  const size_t bs = static_cast<size_t>(pool_->block_size());
  if (index >= anchor.size() || (index + 1) * bs > tokens.size()) {
    fail("kv: keyed lookup of block {} beyond the anchor's {} blocks", index, anchor.size());
  }
  if (!pool_->prefix_caching() || anchor[index].content == kNotCached) return std::nullopt;
  const auto block_tokens = tokens.subspan(index * bs, bs);
  const uint64_t salt = salt_of(index);
  const BlockHash hash = hash_block(anchor[index].hash, salt, block_tokens);
  return pool_->peek_cached({hash, anchor[index].content, salt, block_tokens});
}

bool SequenceBlocks::adopt_keyed(std::span<const ChainLink> anchor, std::span<const int32_t> tokens, size_t first,
                                 size_t end, BlockId null_block) {
  if (!table_.empty()) fail("kv: adopt_keyed on a sequence that already holds {} blocks", table_.size());
  drop_before(first, null_block);
  for (size_t i = first; i < end; ++i) {
    const std::optional<CachedBlock> hit = find_keyed(anchor, tokens, i);
    if (!hit) {
      release_all();
      return false;
    }
    pool_->retain(hit->id);
    table_.push_back(hit->id);
    const size_t bs = static_cast<size_t>(pool_->block_size());
    chain_.push_back({hash_block(anchor[i].hash, salt_of(i), tokens.subspan(i * bs, bs)), hit->content});
  }
  return true;
}

void SequenceBlocks::commit(std::span<const int32_t> tokens, int64_t n_computed, std::span<const ChainLink> anchor) {
  if (n_computed < 0 || n_computed > std::ssize(tokens)) {
    fail("kv: commit of {} computed tokens with {} tokens known", n_computed, tokens.size());
  }
  const size_t bs = static_cast<size_t>(pool_->block_size());
  const size_t n_full = static_cast<size_t>(n_computed) / bs;
  if (n_full > table_.size()) {
    fail("kv: commit of {} tokens, but the sequence's blocks hold {}", n_computed, table_.size() * bs);
  }
  if (!pool_->prefix_caching()) return;
  if (!anchor.empty() && anchor.size() < n_full) {
    fail("kv: commit of {} blocks keyed by an anchor chain of {}", n_full, anchor.size());
  }
  while (chain_.size() < n_full) {
    const size_t i = chain_.size();
    // Keyed by the anchor: the anchor's block i stands for the whole prefix through block i.
    const ChainLink parent = anchor.empty() ? parent_of(i) : anchor[i];
    const auto block_tokens = tokens.subspan(i * bs, bs);
    const uint64_t salt = salt_of(i);
    const BlockHash hash = hash_block(parent.hash, salt, block_tokens);
    // Below a block that could not be indexed (a hash collision) nothing can be found again.
    const ContentId content = parent.content == kNotCached || i >= unpublishable_from_
                                  ? kNotCached
                                  : pool_->publish(table_[i], {hash, parent.content, salt, block_tokens});
    chain_.push_back({hash, content});
  }
}

}  // namespace lumen::kv
