#include "kv/state_slots.h"

#include <algorithm>
#include <functional>

#include "util/error.h"

namespace lumen::kv {

StateSlots::StateSlots(int32_t n_slots) {
  if (n_slots < 1) fail("kv: {} state slots (at least one)", n_slots);
  taken_.assign(static_cast<size_t>(n_slots), false);
  for (int32_t slot = n_slots - 1; slot >= 0; --slot) free_.push_back(slot);
}

std::optional<int32_t> StateSlots::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t slot = free_.back();
  free_.pop_back();
  taken_[static_cast<size_t>(slot)] = true;
  return slot;
}

void StateSlots::release(int32_t slot) {
  if (slot < 0 || slot >= n_slots() || !taken_[static_cast<size_t>(slot)]) {
    fail("kv: release of state slot {}, which is not taken", slot);
  }
  taken_[static_cast<size_t>(slot)] = false;
  free_.insert(std::upper_bound(free_.begin(), free_.end(), slot, std::greater<>()), slot);
}

}  // namespace lumen::kv
