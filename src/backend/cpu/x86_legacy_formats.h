#pragma once
// The legacy 32-element weight formats as the x86 tile kernels read them (x86_tiles.h): each
// block's codes as one 256-bit vector and its scale, and the dot product of codes with Q8
// activations. Like x86_tiles.h, in an unnamed namespace: each x86 level's unit compiles its own.
#include <cstddef>

#include "backend/cpu/kquant_decode.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/x86_simd.h"

namespace lumen::backend::cpu::detail {
namespace {

// ---- legacy 32-element formats against Q8_0 / Q8_1 ----
// Each format exposes its codes as u8 with an offset (value = d * (code - offset)) or, for the
// "_1" kinds, a min (value = d * code + m) that pairs with the Q8_1 block's s = d_x * sum(q_x);
// or, without VNNI, as signed codes (kSignedCodes: the sign moves onto the activation).

struct Q4_0Format {
  using Block = tensor::BlockQ4_0;
  static constexpr int kOffset = 8;
  static constexpr bool kHasMin = false;
  static constexpr bool kSignedCodes = false;
  static __m256i codes(const uint8_t* b) { return unpack_nibbles(b + offsetof(Block, qs)); }
};

struct Q4_1Format {
  using Block = tensor::BlockQ4_1;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kSignedCodes = false;
  static __m256i codes(const uint8_t* b) { return unpack_nibbles(b + offsetof(Block, qs)); }
};

struct Q5_0Format {
  using Block = tensor::BlockQ5_0;
  static constexpr int kOffset = 16;
  static constexpr bool kHasMin = false;
  static constexpr bool kSignedCodes = false;
  static __m256i codes(const uint8_t* b) {
    return _mm256_or_si256(unpack_nibbles(b + offsetof(Block, qs)), fifth_bits(b + offsetof(Block, qh)));
  }
};

struct Q5_1Format {
  using Block = tensor::BlockQ5_1;
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr bool kSignedCodes = false;
  static __m256i codes(const uint8_t* b) {
    return _mm256_or_si256(unpack_nibbles(b + offsetof(Block, qs)), fifth_bits(b + offsetof(Block, qh)));
  }
};

// Q8_0 weights are signed. With VNNI they become u8 by flipping the sign bit (code = q + 128,
// offset 128). Without it, u8 x s8 through int16 would saturate at 255 * 127 * 2, so the AVX2
// build keeps them signed (offset 0) and moves the sign onto the activation instead.
struct Q8_0Format {
  using Block = tensor::BlockQ8_0;
  static constexpr int kOffset = LUMEN_X86_VNNI ? 128 : 0;
  static constexpr bool kHasMin = false;
  static constexpr bool kSignedCodes = !LUMEN_X86_VNNI;
  static __m256i codes(const uint8_t* b) {
    const __m256i q = load_256(b + offsetof(Block, qs));
    return LUMEN_X86_VNNI ? _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))) : q;
  }
};

// The 32 codes of a block of non-linear 4-bit levels (IQ4_NL, and each 32-value sub-block of
// IQ4_XS) as their signed int8 levels: the nibbles index a 16-byte table, one vpshufb (the table
// repeats in both 128-bit lanes, as vpshufb looks up within a lane).
inline __m256i nibble_levels(const int8_t* levels, const uint8_t* qs) {
  const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(levels));
  return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), unpack_nibbles(qs));
}
inline __m256i iq4_levels(const uint8_t* qs) { return nibble_levels(tensor::kIq4Levels, qs); }

// IQ4_NL: signed levels in [-127, 113], so as Q8_0: sign-flipped to u8 with VNNI, signed without.
struct IQ4_NLFormat {
  using Block = tensor::BlockIQ4_NL;
  static constexpr int kOffset = LUMEN_X86_VNNI ? 128 : 0;
  static constexpr bool kHasMin = false;
  static constexpr bool kSignedCodes = !LUMEN_X86_VNNI;
  static __m256i codes(const uint8_t* b) {
    const __m256i levels = iq4_levels(b + offsetof(Block, qs));
    return LUMEN_X86_VNNI ? _mm256_xor_si256(levels, _mm256_set1_epi8(static_cast<char>(0x80))) : levels;
  }
};

// MXFP4: the same lookup in its 16 doubled E2M1 levels ([-12, 12]), and its scale a power of
// two from the block's exponent byte instead of an f16 d.
struct MXFP4Format {
  using Block = tensor::BlockMXFP4;
  static constexpr int kOffset = LUMEN_X86_VNNI ? 128 : 0;
  static constexpr bool kHasMin = false;
  static constexpr bool kSignedCodes = !LUMEN_X86_VNNI;
  static __m256i codes(const uint8_t* b) {
    const __m256i levels = nibble_levels(tensor::kMxfp4Levels, b + offsetof(Block, qs));
    return LUMEN_X86_VNNI ? _mm256_xor_si256(levels, _mm256_set1_epi8(static_cast<char>(0x80))) : levels;
  }
  static float scale(const uint8_t* b) { return tensor::mxfp4_scale(b[offsetof(Block, e)]); }
};

// A block's scale: the format's own rule where it has one, else the f16 d at the block's start.
template <typename F>
inline float legacy_scale(const uint8_t* b) {
  if constexpr (requires { F::scale(b); }) {
    return F::scale(b);
  } else {
    return load_f16(b);
  }
}

template <typename F>
inline __m256i legacy_dot(__m256i base, __m256i codes, __m256i act) {
  if constexpr (F::kSignedCodes) {
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(codes, codes), _mm256_sign_epi8(act, codes));
    return _mm256_add_epi32(base, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  } else {
    return dot_u8s8(base, codes, act);
  }
}

}  // namespace
}  // namespace lumen::backend::cpu::detail
