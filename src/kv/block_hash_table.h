#pragma once
// The prefix cache's index: BlockHash -> BlockId, open addressing with linear probing in a table
// sized once for the pool. A pool of n blocks never holds more than n published blocks, so with
// at least 2n slots the table never grows and the load stays <= 1/2: inserting (publish) and
// erasing (eviction inside BlockPool::allocate) never touch the allocator. Erase shifts the
// following entries back instead of leaving tombstones, so probe lengths do not creep up over a
// long-running server's millions of evictions.
#include <cstdint>
#include <vector>

#include "kv/block_hash.h"

namespace lumen::kv {

class BlockHashTable {
 public:
  explicit BlockHashTable(int32_t max_entries);

  int32_t size() const { return size_; }
  // The value stored under key, or -1.
  int32_t find(BlockHash key) const;
  // Stores key -> value (value >= 0) unless key is present; returns whether it stored.
  bool insert(BlockHash key, int32_t value);
  // Removes key, which must be present.
  void erase(BlockHash key);

 private:
  struct Slot {
    BlockHash key = 0;
    int32_t value = -1;  // -1: empty
  };
  size_t home(BlockHash key) const { return mix64(key) & mask_; }
  size_t find_slot(BlockHash key) const;  // the slot holding key, or an empty slot

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int32_t size_ = 0;
  int32_t max_entries_ = 0;
};

}  // namespace lumen::kv
