#pragma once
// The recurrent-state prefix cache: copies of a state model's per-sequence state taken where a
// prompt's prefix ends a full KV block, keyed by that prefix (the prefix cache's block hash
// chain, kv/block_hash.h). A later prompt with the same prefix starts from the deepest copy
// instead of from zeros, and prefills only the rest. Exact: the copy is the state the forward
// pass left after exactly those tokens, and a lookup compares the stored tokens and salt, not
// the hash alone (a collision costs a miss, never a wrong state).
//
// A state is opaque bytes here (whatever layout the model's StateCache slot has: Mamba 2's
// convolution window and SSM state, or another recurrence's). A bounded number of entries of
// one slot's bytes each, host memory, least recently used out first. Bookkeeping and memory
// both live here: the scheduler decides what is stored and restored, the model runner copies.
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_hash.h"

namespace lumen::engine {

struct StateSnapshotCounters {
  uint64_t queries = 0;     // prompts looked up
  uint64_t hits = 0;        // lookups that found a snapshot
  uint64_t hit_tokens = 0;  // prompt tokens the hits skipped
  uint64_t stored = 0;      // snapshots taken
  uint64_t evictions = 0;   // snapshots dropped for room
};

class StateSnapshots {
 public:
  // n_entries snapshots of entry_bytes each (the state of one sequence, every layer).
  StateSnapshots(int64_t n_entries, size_t entry_bytes, int64_t block_size);

  struct Hit {
    int32_t entry;
    int64_t n_tokens;  // the snapshot is the state after tokens[0, n_tokens), a block multiple
  };
  // The deepest snapshot of a prefix of `tokens` no longer than max_tokens (whole blocks), or
  // none. Counts a query (and a hit); a hit becomes the most recently used.
  std::optional<Hit> find_deepest(std::span<const int32_t> tokens, uint64_t salt, int64_t max_tokens);
  // An entry to hold the state after `prefix` (a whole number of blocks), the least recently
  // used one evicted for it; none when that prefix is stored already (it is refreshed instead).
  // The caller then fills data(entry).
  std::optional<int32_t> insert(std::span<const int32_t> prefix, uint64_t salt);

  uint8_t* data(int32_t entry) { return bytes_.data() + static_cast<size_t>(entry) * entry_bytes_; }
  size_t entry_bytes() const { return entry_bytes_; }
  int64_t n_entries() const { return static_cast<int64_t>(entries_.size()); }
  int64_t n_used() const { return static_cast<int64_t>(by_hash_.size()); }
  // The snapshots' memory, and the tokens kept to check a hit.
  size_t bytes() const;
  const StateSnapshotCounters& counters() const { return counters_; }

 private:
  struct Entry {
    kv::BlockHash hash = 0;
    uint64_t salt = 0;
    std::vector<int32_t> tokens;  // the prefix: a hit must equal it, not only hash like it
    std::list<int32_t>::iterator lru;
    bool used = false;
  };
  // Block i's chain hash over tokens (hash_block(parent, salt, block)), as the prefix cache keys it.
  std::vector<kv::BlockHash> chain(std::span<const int32_t> tokens, uint64_t salt, int64_t n_blocks) const;
  void drop(int32_t entry);

  size_t entry_bytes_;
  int64_t block_size_;
  std::vector<uint8_t> bytes_;
  std::vector<Entry> entries_;
  std::unordered_multimap<kv::BlockHash, int32_t> by_hash_;
  std::list<int32_t> lru_;  // front: most recently used
  std::vector<int32_t> free_;
  StateSnapshotCounters counters_;
};

}  // namespace lumen::engine
