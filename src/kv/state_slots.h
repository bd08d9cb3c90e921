#pragma once
// Fixed-size recurrent-state slots (a state-space model's per-sequence state, kept beside the
// paged KV): which slots are free. Bookkeeping only, like the block pool: the memory is
// model::StateCache's. A sequence holds one slot while it runs, whatever its length.
#include <cstdint>
#include <optional>
#include <vector>

namespace lumen::kv {

class StateSlots {
 public:
  explicit StateSlots(int32_t n_slots);

  // The lowest free slot, or none when every slot is taken.
  std::optional<int32_t> allocate();
  // Throws lumen::Error for a slot that is not taken (a double release is a bookkeeping bug).
  void release(int32_t slot);
  int32_t n_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t n_slots() const { return static_cast<int32_t>(taken_.size()); }

 private:
  std::vector<int32_t> free_;  // kept in descending order: allocate pops the lowest
  std::vector<bool> taken_;
};

}  // namespace lumen::kv
