#pragma once
// Size arithmetic on untrusted numbers (file headers, request fields). Every helper returns
// std::nullopt instead of wrapping, so a hostile count can never turn into a small allocation
// followed by a large write.
#include <cstdint>
#include <optional>

namespace lumen {

inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// Rounds value up to a multiple of align (a power of two), or nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t value, uint64_t align) {
  auto bumped = checked_add(value, align - 1);
  if (!bumped) return std::nullopt;
  return *bumped & ~(align - 1);
}

inline bool is_power_of_two(uint64_t value) { return value != 0 && (value & (value - 1)) == 0; }

}  // namespace lumen
