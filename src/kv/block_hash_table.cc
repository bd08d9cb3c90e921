#include "kv/block_hash_table.h"

#include <algorithm>
#include <bit>

#include "util/error.h"

namespace lumen::kv {

BlockHashTable::BlockHashTable(int32_t max_entries) : max_entries_(max_entries) {
  if (max_entries < 0) fail("kv: hash table size {} is negative", max_entries);
  // Keys are re-mixed in home(), so even hand-picked keys (tests) spread over the slots.
  const size_t capacity = std::bit_ceil(std::max<size_t>(2, 2 * static_cast<size_t>(max_entries)));
  slots_.resize(capacity);
  mask_ = capacity - 1;
}

size_t BlockHashTable::find_slot(BlockHash key) const {
  size_t i = home(key);
  while (slots_[i].value >= 0 && slots_[i].key != key) i = (i + 1) & mask_;
  return i;
}

int32_t BlockHashTable::find(BlockHash key) const { return slots_[find_slot(key)].value; }

bool BlockHashTable::insert(BlockHash key, int32_t value) {
  if (value < 0) fail("kv: hash table value {} is negative", value);
  const size_t i = find_slot(key);
  if (slots_[i].value >= 0) return false;
  if (size_ == max_entries_) fail("kv: hash table is full ({} entries)", max_entries_);
  slots_[i] = {key, value};
  ++size_;
  return true;
}

void BlockHashTable::erase(BlockHash key) {
  size_t hole = find_slot(key);
  if (slots_[hole].value < 0) fail("kv: erasing hash {:#x}, which is not in the table", key);
  // Backward-shift deletion: walk the run after the hole and move back every entry whose home
  // slot does not lie in (hole, j]; such an entry was probed past the hole and must stay
  // reachable from its home without crossing an empty slot.
  for (size_t j = (hole + 1) & mask_; slots_[j].value >= 0; j = (j + 1) & mask_) {
    const size_t h = home(slots_[j].key);
    if (((j - h) & mask_) >= ((j - hole) & mask_)) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = {};
  --size_;
}

}  // namespace lumen::kv
