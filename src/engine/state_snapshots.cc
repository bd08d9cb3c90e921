#include "engine/state_snapshots.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::engine {

StateSnapshots::StateSnapshots(int64_t n_entries, size_t entry_bytes, int64_t block_size)
    : entry_bytes_(entry_bytes), block_size_(block_size) {
  if (n_entries < 1 || entry_bytes == 0 || block_size < 1) {
    fail("state snapshots: {} entries of {} bytes, blocks of {} tokens", n_entries, entry_bytes, block_size);
  }
  bytes_.resize(static_cast<size_t>(n_entries) * entry_bytes);
  entries_.resize(static_cast<size_t>(n_entries));
  for (int64_t e = n_entries - 1; e >= 0; --e) free_.push_back(static_cast<int32_t>(e));
}

std::vector<kv::BlockHash> StateSnapshots::chain(std::span<const int32_t> tokens, uint64_t salt,
                                                 int64_t n_blocks) const {
  std::vector<kv::BlockHash> hashes;
  kv::BlockHash parent = kv::kRootBlockHash;
  const auto bs = static_cast<size_t>(block_size_);
  for (int64_t i = 0; i < n_blocks; ++i) {
    parent = kv::hash_block(parent, salt, tokens.subspan(static_cast<size_t>(i) * bs, bs));
    hashes.push_back(parent);
  }
  return hashes;
}

std::optional<StateSnapshots::Hit> StateSnapshots::find_deepest(std::span<const int32_t> tokens, uint64_t salt,
                                                                int64_t max_tokens) {
  ++counters_.queries;
  const int64_t n_blocks = std::min<int64_t>(max_tokens, std::ssize(tokens)) / block_size_;
  if (n_blocks <= 0 || by_hash_.empty()) return std::nullopt;
  const std::vector<kv::BlockHash> hashes = chain(tokens, salt, n_blocks);
  for (int64_t b = n_blocks; b >= 1; --b) {
    const auto n_tokens = static_cast<size_t>(b * block_size_);
    auto [first, last] = by_hash_.equal_range(hashes[static_cast<size_t>(b - 1)]);
    for (auto it = first; it != last; ++it) {
      Entry& e = entries_[static_cast<size_t>(it->second)];
      if (e.salt != salt || e.tokens.size() != n_tokens ||
          !std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin())) {
        continue;
      }
      lru_.splice(lru_.begin(), lru_, e.lru);
      ++counters_.hits;
      counters_.hit_tokens += n_tokens;
      return Hit{it->second, static_cast<int64_t>(n_tokens)};
    }
  }
  return std::nullopt;
}

std::optional<int32_t> StateSnapshots::insert(std::span<const int32_t> prefix, uint64_t salt) {
  const int64_t n_blocks = std::ssize(prefix) / block_size_;
  if (n_blocks < 1 || n_blocks * block_size_ != std::ssize(prefix)) {
    fail("state snapshots: a prefix of {} tokens is not whole blocks of {}", prefix.size(), block_size_);
  }
  const kv::BlockHash hash = chain(prefix, salt, n_blocks).back();
  auto [first, last] = by_hash_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    Entry& e = entries_[static_cast<size_t>(it->second)];
    if (e.salt == salt && std::ranges::equal(e.tokens, prefix)) {
      lru_.splice(lru_.begin(), lru_, e.lru);
      return std::nullopt;
    }
  }
  if (free_.empty()) {
    drop(lru_.back());
    ++counters_.evictions;
  }
  const int32_t entry = free_.back();
  free_.pop_back();
  Entry& e = entries_[static_cast<size_t>(entry)];
  e.hash = hash;
  e.salt = salt;
  e.tokens.assign(prefix.begin(), prefix.end());
  e.used = true;
  lru_.push_front(entry);
  e.lru = lru_.begin();
  by_hash_.emplace(hash, entry);
  ++counters_.stored;
  return entry;
}

void StateSnapshots::drop(int32_t entry) {
  Entry& e = entries_[static_cast<size_t>(entry)];
  auto [first, last] = by_hash_.equal_range(e.hash);
  for (auto it = first; it != last; ++it) {
    if (it->second == entry) {
      by_hash_.erase(it);
      break;
    }
  }
  lru_.erase(e.lru);
  e.tokens = {};
  e.used = false;
  free_.push_back(entry);
}

size_t StateSnapshots::bytes() const {
  size_t tokens = 0;
  for (const Entry& e : entries_) tokens += e.tokens.capacity() * sizeof(int32_t);
  return bytes_.size() + tokens;
}

}  // namespace lumen::engine
