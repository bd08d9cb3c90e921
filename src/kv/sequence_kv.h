#pragma once
// One sequence's KV blocks across the layer groups of a KvLayout: a SequenceBlocks per group,
// all on one pool. Every operation is all-or-nothing over the groups, so the scheduler sees one
// sequence with one block count, as before groups existed.
//
// Windowed groups release, after each step, the blocks their next queries can no longer see.
// The prefix cache keys group 0 by its own chain and every other group by group 0's chain; a
// prefix is adopted when group 0 has it and each other group has the blocks its next query
// needs (all of them for full attention, the last window's for a windowed group).
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kv/kv_layout.h"
#include "kv/sequence_blocks.h"

namespace lumen::kv {

// What every sequence's KV shares. null_block is a block the owner holds for good and keeps
// zeroed, never written: the table entry of every dropped block (-1 when no group has a window).
struct KvSpace {
  BlockPool* pool = nullptr;
  const KvLayout* layout = nullptr;
  BlockId null_block = -1;
};

class SequenceKv {
 public:
  SequenceKv(const KvSpace& space, uint64_t cache_salt);

  // See SequenceBlocks; counted over every group.
  int64_t adopt_cached_prefix(std::span<const int32_t> tokens, int64_t max_tokens, bool counted = true);
  int32_t blocks_needed(int64_t n_computed, int64_t n) const;
  bool reserve(int64_t n_computed, int64_t n, std::vector<BlockCopy>& copies);
  // Publishes the newly full blocks, then drops what fell out of each window.
  void commit(std::span<const int32_t> tokens, int64_t n_computed);
  SequenceKv fork() const;
  // SequenceBlocks::salt_blocks, in every group (block indices are the same in each).
  void salt_blocks(const std::vector<SequenceBlocks::BlockSalt>& salts);
  void release_all();
  // Keeps the blocks of positions [0, n_tokens) in every group and releases the later ones
  // (speculative decoding: the positions of rejected draft tokens). Nothing is copied.
  void truncate(int64_t n_tokens);

  // Context shift (SequenceBlocks::shift): positions [keep, keep + discard) blocks' worth go,
  // the later blocks move down. Only for a layout of one full-attention group; nullopt (nothing
  // changed) when the pool lacks the blocks for the copies.
  std::optional<std::vector<BlockId>> shift(size_t keep, size_t discard, std::vector<BlockCopy>& copies);

  // Importance-based eviction (SequenceBlocks::compact); one full-attention group only.
  std::optional<SequenceBlocks::Compaction> compact(int64_t n_keep);

  // Moving a prompt's K/V between engines (disaggregated prefill and decode). Both counts are
  // whole blocks. The blocks holding what a query at n_tokens needs of positions
  // [n_known, n_tokens): group by group, each from max(n_known, its window's first position) on,
  // in position order. The sender reads these; the receiver writes its own.
  std::vector<BlockId> blocks_from(int64_t n_known, int64_t n_tokens) const;
  // For a sequence holding exactly the adopted prefix [0, n_known): drops what a query at n_tokens
  // no longer sees and allocates the blocks that blocks_from(n_known, n_tokens) then names, for
  // another engine's K/V of the rest. commit(tokens, n_tokens) publishes them once written.
  // False, with nothing changed, when the pool lacks the blocks.
  bool reserve_import(int64_t n_known, int64_t n_tokens);

  // Swapping. The held blocks covering [0, n_computed), group by group, in table order.
  std::vector<BlockId> held_blocks(int64_t n_computed) const;
  // For a sequence whose K/V of [0, n_computed) comes back from the host: the blocks to allocate
  // to restore it and compute n more tokens, and the reservation itself (false: nothing
  // changed). Afterwards held_blocks(n_computed) names the restored blocks, in the swapped order.
  int32_t blocks_needed_to_restore(int64_t n_computed, int64_t n) const;
  bool restore(int64_t n_computed, int64_t n, std::vector<BlockCopy>& copies);

  std::span<const BlockId> table(size_t group) const { return groups_[group].table(); }
  size_t n_groups() const { return groups_.size(); }
  int64_t n_held_blocks() const;
  // Positions whose K/V the held blocks contain, summed over the groups, for n_computed
  // computed positions (each group from its first held block).
  int64_t n_held_positions(int64_t n_computed) const;
  uint64_t cache_salt() const { return salt_; }

 private:
  SequenceKv(const KvSpace& space, uint64_t salt, std::vector<SequenceBlocks> groups);
  int64_t window(size_t group) const { return space_.layout->groups[group].window; }
  // Blocks group g must hold (from its first) for queries at n_computed and beyond.
  size_t first_needed(size_t group, int64_t n_computed) const;
  // How many of group 0's adopted `n_blocks` leading blocks every other group can match.
  size_t matched_blocks(std::span<const int32_t> tokens, size_t n_blocks) const;
  void drop_out_of_window(int64_t n_computed);

  KvSpace space_;
  uint64_t salt_;
  std::vector<SequenceBlocks> groups_;
};

}  // namespace lumen::kv
