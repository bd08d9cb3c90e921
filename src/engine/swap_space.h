#pragma once
// Host memory for the K/V blocks of sequences preempted by swapping: a fixed number of slots,
// each holding one block of every layer. The scheduler only hands out slot numbers (it never
// touches memory); the model runner copies blocks into and out of `slot_data`.
#include <cstdint>
#include <optional>
#include <vector>

namespace lumen::engine {

class SwapSpace {
 public:
  SwapSpace(int64_t n_slots, size_t slot_bytes)
      : slot_bytes_(slot_bytes), bytes_(static_cast<size_t>(n_slots) * slot_bytes) {
    for (int64_t i = n_slots - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
  }

  int64_t n_free() const { return static_cast<int64_t>(free_.size()); }
  int64_t n_slots() const { return static_cast<int64_t>(bytes_.size() / slot_bytes_); }
  // n slots, or nothing (and no change) when fewer are free.
  std::optional<std::vector<int32_t>> allocate(int64_t n) {
    if (n > n_free()) return std::nullopt;
    std::vector<int32_t> slots(free_.end() - n, free_.end());
    free_.resize(free_.size() - static_cast<size_t>(n));
    return slots;
  }
  void release(const std::vector<int32_t>& slots) { free_.insert(free_.end(), slots.begin(), slots.end()); }

  uint8_t* slot_data(int32_t slot) { return bytes_.data() + static_cast<size_t>(slot) * slot_bytes_; }

 private:
  size_t slot_bytes_;
  std::vector<uint8_t> bytes_;
  std::vector<int32_t> free_;
};

}  // namespace lumen::engine
