#include "kv/sequence_kv.h"

#include <algorithm>
#include <limits>

#include "util/error.h"

namespace lumen::kv {

namespace {

// Group g > 0 publishes under its own salt, so its blocks never answer another group's lookups.
uint64_t group_salt(uint64_t salt, size_t group) {
  return group == 0 ? salt : mix64(salt ^ mix64(0x6b762d67726f7570ULL + group));  // "kv-group"
}

}  // namespace

SequenceKv::SequenceKv(const KvSpace& space, uint64_t cache_salt) : space_(space), salt_(cache_salt) {
  if (space.pool == nullptr || space.layout == nullptr || space.layout->groups.empty()) {
    fail("kv: a sequence needs a pool and a layout with at least one group");
  }
  if (space.layout->has_windows() && space.null_block < 0) fail("kv: a windowed layout needs a null block");
  groups_.reserve(space.layout->groups.size());
  for (size_t g = 0; g < space.layout->groups.size(); ++g) groups_.emplace_back(*space.pool, group_salt(salt_, g));
}

SequenceKv::SequenceKv(const KvSpace& space, uint64_t salt, std::vector<SequenceBlocks> groups)
    : space_(space), salt_(salt), groups_(std::move(groups)) {}

size_t SequenceKv::first_needed(size_t group, int64_t n_computed) const {
  return static_cast<size_t>(first_block_in_window(n_computed, window(group), space_.pool->block_size()));
}

void SequenceKv::drop_out_of_window(int64_t n_computed) {
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (window(g) > 0) groups_[g].drop_before(first_needed(g, n_computed), space_.null_block);
  }
}

size_t SequenceKv::matched_blocks(std::span<const int32_t> tokens, size_t n_blocks) const {
  const std::span<const SequenceBlocks::ChainLink> anchor = groups_[0].chain();
  const int64_t bs = space_.pool->block_size();
  // Shorten until every group has what the next query needs. A shorter prefix can need earlier
  // blocks of a windowed group, so check again until nothing changes.
  for (bool changed = true; changed && n_blocks > 0;) {
    changed = false;
    for (size_t g = 1; g < groups_.size() && n_blocks > 0; ++g) {
      const size_t first = first_needed(g, static_cast<int64_t>(n_blocks) * bs);
      for (size_t i = n_blocks; i-- > first;) {
        if (!groups_[g].find_keyed(anchor, tokens, i)) {
          n_blocks = i;
          changed = true;
          break;
        }
      }
    }
  }
  return n_blocks;
}

int64_t SequenceKv::adopt_cached_prefix(std::span<const int32_t> tokens, int64_t max_tokens, bool counted) {
  const int64_t bs = space_.pool->block_size();
  const auto anchored = static_cast<size_t>(groups_[0].adopt_cached_prefix(tokens, max_tokens, counted) / bs);
  if (groups_.size() == 1) {
    drop_out_of_window(static_cast<int64_t>(anchored) * bs);
    return static_cast<int64_t>(anchored) * bs;
  }
  const size_t n_blocks = matched_blocks(tokens, anchored);
  groups_[0].truncate(static_cast<int64_t>(n_blocks) * bs);
  const int64_t n_tokens = static_cast<int64_t>(n_blocks) * bs;
  for (size_t g = 1; g < groups_.size(); ++g) {
    if (!groups_[g].adopt_keyed(groups_[0].chain(), tokens, first_needed(g, n_tokens), n_blocks,
                                space_.null_block)) {
      release_all();  // cannot happen: the blocks were just found and nothing ran in between
      return 0;
    }
  }
  drop_out_of_window(n_tokens);
  return n_tokens;
}

int32_t SequenceKv::blocks_needed(int64_t n_computed, int64_t n) const {
  int64_t total = 0;
  for (const SequenceBlocks& g : groups_) total += g.blocks_needed(n_computed, n);
  return static_cast<int32_t>(std::min<int64_t>(total, std::numeric_limits<int32_t>::max()));
}

bool SequenceKv::reserve(int64_t n_computed, int64_t n, std::vector<BlockCopy>& copies) {
  if (blocks_needed(n_computed, n) > space_.pool->n_available()) return false;
  for (SequenceBlocks& g : groups_) {
    if (!g.reserve(n_computed, n, copies)) fail("kv: a group's reservation failed after the count said it fits");
  }
  return true;
}

void SequenceKv::commit(std::span<const int32_t> tokens, int64_t n_computed) {
  groups_[0].commit(tokens, n_computed);
  for (size_t g = 1; g < groups_.size(); ++g) groups_[g].commit(tokens, n_computed, groups_[0].chain());
  drop_out_of_window(n_computed);
}

std::optional<std::vector<BlockId>> SequenceKv::shift(size_t keep, size_t discard, std::vector<BlockCopy>& copies) {
  if (groups_.size() != 1 || window(0) != 0) {
    fail("kv: a context shift needs one full-attention layer group, not {} groups", groups_.size());
  }
  return groups_[0].shift(keep, discard, copies);
}

std::optional<SequenceBlocks::Compaction> SequenceKv::compact(int64_t n_keep) {
  if (groups_.size() != 1 || window(0) != 0) {
    fail("kv: importance-based eviction needs one full-attention layer group, not {} groups", groups_.size());
  }
  return groups_[0].compact(n_keep);
}

SequenceKv SequenceKv::fork() const {
  std::vector<SequenceBlocks> copies;
  copies.reserve(groups_.size());
  for (const SequenceBlocks& g : groups_) copies.push_back(g.fork());
  return SequenceKv(space_, salt_, std::move(copies));
}

void SequenceKv::salt_blocks(const std::vector<SequenceBlocks::BlockSalt>& salts) {
  for (SequenceBlocks& g : groups_) g.salt_blocks(salts);
}

void SequenceKv::truncate(int64_t n_tokens) {
  for (SequenceBlocks& g : groups_) g.truncate(n_tokens);
}

void SequenceKv::release_all() {
  for (SequenceBlocks& g : groups_) g.release_all();
}

std::vector<BlockId> SequenceKv::held_blocks(int64_t n_computed) const {
  const int64_t bs = space_.pool->block_size();
  const auto end = static_cast<size_t>((n_computed + bs - 1) / bs);
  std::vector<BlockId> held;
  for (const SequenceBlocks& g : groups_) {
    const std::span<const BlockId> table = g.table();
    if (table.size() < end) fail("kv: {} computed tokens, but a group's table holds {} blocks", n_computed, table.size());
    for (size_t i = g.first_held(); i < end; ++i) held.push_back(table[i]);
  }
  return held;
}

int32_t SequenceKv::blocks_needed_to_restore(int64_t n_computed, int64_t n) const {
  const int64_t bs = space_.pool->block_size();
  const int64_t end = n_computed + n;
  int64_t total = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!groups_[g].table().empty()) fail("kv: restore into a sequence that holds blocks");
    const auto first = static_cast<int64_t>(first_needed(g, n_computed));
    total += std::max<int64_t>(0, (end + bs - 1) / bs - first);
  }
  return static_cast<int32_t>(std::min<int64_t>(total, std::numeric_limits<int32_t>::max()));
}

bool SequenceKv::restore(int64_t n_computed, int64_t n, std::vector<BlockCopy>& copies) {
  if (blocks_needed_to_restore(n_computed, n) > space_.pool->n_available()) return false;
  const int64_t bs = space_.pool->block_size();
  for (size_t g = 0; g < groups_.size(); ++g) {
    const size_t first = first_needed(g, n_computed);
    if (first > 0) groups_[g].drop_before(first, space_.null_block);
    const int64_t from = static_cast<int64_t>(first) * bs;
    if (!groups_[g].reserve(from, n_computed + n - from, copies)) {
      fail("kv: a group's restore failed after the count said it fits");
    }
  }
  return true;
}

int64_t SequenceKv::n_held_blocks() const {
  int64_t total = 0;
  for (const SequenceBlocks& g : groups_) total += static_cast<int64_t>(g.n_held());
  return total;
}

int64_t SequenceKv::n_held_positions(int64_t n_computed) const {
  const int64_t bs = space_.pool->block_size();
  int64_t total = 0;
  for (const SequenceBlocks& g : groups_) {
    total += std::max<int64_t>(0, n_computed - static_cast<int64_t>(g.first_held()) * bs);
  }
  return total;
}

}  // namespace lumen::kv
