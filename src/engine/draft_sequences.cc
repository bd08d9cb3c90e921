#include "engine/draft_sequences.h"

#include <algorithm>

namespace lumen::engine {

DraftSequences::DraftSequences(backend::Backend& backend, const model::HParams& hp, int32_t n_blocks, int32_t block_size)
    : cache_(backend, hp, n_blocks, block_size),
      pool_(n_blocks, block_size, /*enable_prefix_caching=*/true),
      space_{&pool_, &cache_.layout(), -1} {}

DraftSequence* DraftSequences::prepare(uint64_t sequence_id, uint64_t cache_salt, std::span<const int32_t> tokens,
                                       int64_t n_keep, int64_t n_new) {
  auto [it, added] = sequences_.try_emplace(sequence_id, space_, cache_salt);
  DraftSequence& seq = it->second;
  seq.last_used = step_;
  // K/V is valid only after the very tokens it was computed from: keep the common prefix.
  const auto limit = static_cast<size_t>(std::min<int64_t>(n_keep, std::ssize(tokens)));
  const size_t n_checked = std::min(seq.computed.size(), limit);
  const auto same = static_cast<size_t>(
      std::mismatch(seq.computed.begin(), seq.computed.begin() + static_cast<std::ptrdiff_t>(n_checked), tokens.begin())
          .first -
      seq.computed.begin());
  if (same < seq.computed.size()) {
    seq.blocks.truncate(static_cast<int64_t>(same));
    seq.computed.resize(same);
  }
  if (seq.computed.empty()) {
    // Nothing held: another sequence with this prefix (a fork's parent, this sequence before it
    // was dropped) may have left its full blocks in the prefix cache.
    seq.blocks.truncate(0);
    const int64_t adopted = seq.blocks.adopt_cached_prefix(tokens, static_cast<int64_t>(limit));
    seq.computed.assign(tokens.begin(), tokens.begin() + adopted);
  }
  const auto n_computed = static_cast<int64_t>(seq.computed.size());
  const int64_t n_positions = std::ssize(tokens) - n_computed + n_new;
  copies_.clear();
  while (!seq.blocks.reserve(n_computed, n_positions, copies_)) {
    if (!evict_one()) return nullptr;  // it keeps what it holds, for a later step
  }
  // Copy-on-write of a shared block this sequence is about to write, in order (kv::BlockCopy).
  for (const kv::BlockCopy& copy : copies_) cache_.copy_block(copy.src, copy.dst);
  return &seq;
}

bool DraftSequences::evict_one() {
  auto victim = sequences_.end();
  for (auto it = sequences_.begin(); it != sequences_.end(); ++it) {
    if (it->second.last_used == step_ || it->second.blocks.n_held_blocks() == 0) continue;
    if (victim == sequences_.end() || it->second.last_used < victim->second.last_used) victim = it;
  }
  if (victim == sequences_.end()) return false;
  // Its full blocks stay findable in the prefix cache until the pool reuses them.
  sequences_.erase(victim);
  return true;
}

void DraftSequences::forget_ended(const std::function<bool(uint64_t)>& live) {
  std::erase_if(sequences_, [&live](const auto& entry) { return !live(entry.first); });
}

}  // namespace lumen::engine
