// SequenceKv's side of moving a prompt's K/V between engines (disaggregated prefill and decode):
// the blocks that carry it (kv/kv_layout.h, transfer_blocks), and room for it in the receiving
// engine.
#include <algorithm>

#include "kv/sequence_kv.h"
#include "util/error.h"

namespace lumen::kv {

std::vector<BlockId> SequenceKv::blocks_from(int64_t n_known, int64_t n_tokens) const {
  std::vector<BlockId> blocks;
  for (const TransferBlock& b : transfer_blocks(*space_.layout, n_known, n_tokens, space_.pool->block_size())) {
    const SequenceBlocks& group = groups_[b.group];
    if (b.index >= group.table().size() || b.index < group.first_held()) {
      fail("kv: group {} holds blocks [{}, {}), not block {} of a transfer", b.group, group.first_held(),
           group.table().size(), b.index);
    }
    blocks.push_back(group.table()[b.index]);
  }
  return blocks;
}

bool SequenceKv::reserve_import(int64_t n_known, int64_t n_tokens) {
  const int64_t bs = space_.pool->block_size();
  const std::vector<TransferBlock> wanted = transfer_blocks(*space_.layout, n_known, n_tokens, bs);
  const auto known = static_cast<size_t>(n_known / bs);
  for (const SequenceBlocks& group : groups_) {
    if (group.table().size() != known) {
      fail("kv: an import after {} known positions into a group holding {} blocks", n_known, group.table().size());
    }
  }
  if (std::ssize(wanted) > space_.pool->n_available()) return false;
  std::vector<BlockCopy> copies;  // fresh blocks past every held one: nothing to copy
  for (size_t g = 0; g < groups_.size(); ++g) {
    // A windowed group's blocks below its window at n_tokens are never sent: their entries
    // become the null block (and their chain "not cached"), so commit() publishes only blocks
    // that hold what was received.
    const size_t first = first_needed(g, n_tokens);
    if (first > 0) groups_[g].drop_before(first, space_.null_block);
    const int64_t from = static_cast<int64_t>(std::max(known, first)) * bs;
    if (!groups_[g].reserve(from, std::max<int64_t>(0, n_tokens - from), copies)) {
      fail("kv: a group's import reservation failed after the count said it fits");
    }
  }
  if (!copies.empty()) fail("kv: an import reservation asked for {} copies", copies.size());
  return true;
}

}  // namespace lumen::kv
