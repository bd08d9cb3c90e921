#pragma once
// Incremental UTF-8 decoding for the matcher: a token may end in the middle of a character,
// so the state between bytes is part of the matcher's state. Ill-formed sequences (stray
// continuation bytes, overlong forms, surrogates, beyond U+10FFFF) are refused: a grammar
// matches characters, and such bytes are none.
#include <cstdint>

namespace lumen::grammar {

struct Utf8Partial {
  uint32_t bits = 0;      // the code point's bits read so far
  uint8_t remaining = 0;  // continuation bytes still to come (0: at a character boundary)
  uint8_t length = 0;     // bytes in the whole sequence
  bool operator==(const Utf8Partial&) const = default;
};

enum class Utf8Step { kComplete, kPartial, kInvalid };

// Feeds one byte. kComplete: `cp` holds the code point. kPartial: [lo, hi] is the range of
// code points the sequence can still become. kInvalid: no character starts like this.
inline Utf8Step utf8_step(Utf8Partial& state, uint8_t byte, uint32_t& cp, uint32_t& lo, uint32_t& hi) {
  if (state.remaining == 0) {
    if (byte < 0x80) {
      cp = byte;
      return Utf8Step::kComplete;
    }
    if (byte >= 0xC2 && byte <= 0xDF) {
      state = {byte & 0x1Fu, 1, 2};
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      state = {byte & 0x0Fu, 2, 3};
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      state = {byte & 0x07u, 3, 4};
    } else {
      return Utf8Step::kInvalid;
    }
  } else {
    if ((byte & 0xC0) != 0x80) return Utf8Step::kInvalid;
    state.bits = (state.bits << 6) | (byte & 0x3Fu);
    --state.remaining;
  }
  const uint32_t shift = 6u * state.remaining;
  lo = state.bits << shift;
  hi = lo | ((1u << shift) - 1u);
  static constexpr uint32_t kMinimum[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (lo < kMinimum[state.length]) lo = kMinimum[state.length];
  if (hi > 0x10FFFF) hi = 0x10FFFF;
  // Surrogates are not characters: cut them off the range's ends (a range inside is kept whole,
  // which can only let through a prefix that no character completes).
  if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
  if (hi >= 0xD800 && hi <= 0xDFFF) hi = 0xD7FF;
  if (lo > hi) return Utf8Step::kInvalid;
  if (state.remaining > 0) return Utf8Step::kPartial;
  cp = state.bits;
  state = {};
  return Utf8Step::kComplete;
}

}  // namespace lumen::grammar
