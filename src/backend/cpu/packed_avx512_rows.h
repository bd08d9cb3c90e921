#pragma once
// The small readers both packed-weight kernel files share (matmul_packed_avx512.cc for the
// legacy types, IQ4_NL and MXFP4, matmul_packed_kquant_avx512.cc for the K-quants and IQ4_XS): 512-bit loads and
// broadcasts (the scalar readers are x86_simd.h's), and where a packed activation row
// (matmul_kernels.h) keeps its pieces.
//
// Include only from those files, compiled with AVX-512 F/BW and VNNI: everything here has
// internal linkage, so no copy built for another instruction set can be merged with these.
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "packed_avx512_rows.h needs AVX-512 F and BW"
#endif

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/x86_simd.h"
#include "tensor/block_formats.h"

namespace lumen::backend::cpu::detail {
namespace {

inline __m512i load_512(const uint8_t* p) { return _mm512_loadu_si512(p); }

// Four bytes broadcast to all 16 lanes (the activation operand of vpdpbusd / vpdpwssd).
inline __m512i bcast(const uint8_t* p) { return _mm512_set1_epi32(load_i32(p)); }

// Where a packed activation row of `cols` values keeps its int8 codes, its f32 scale per 32
// elements, and its extra words per 32 elements.
struct ActivationRow {
  const uint8_t* codes;
  const uint8_t* d;
  const uint8_t* extra;
};

inline ActivationRow activation_row(const uint8_t* row, int64_t cols) {
  return {row, row + cols, row + cols + 4 * (cols / tensor::kLegacyBlock)};
}

// vpshufb's tables of non-linear 4-bit codes: the 16 levels sign-flipped (level + 128, the
// unsigned operand of vpdpbusd) in each 128-bit lane, as vpshufb looks up within a lane. IQ4_NL
// and IQ4_XS share one; MXFP4 has its doubled E2M1 levels. A load rather than a broadcast of 16
// bytes (GCC 12's broadcast intrinsic passes an undefined merge source).
struct LevelTable {
  alignas(64) uint8_t bytes[64];
};

constexpr LevelTable make_level_table(const int8_t (&levels)[16]) {
  LevelTable t{};
  for (int i = 0; i < 64; ++i) t.bytes[i] = static_cast<uint8_t>(static_cast<uint8_t>(levels[i % 16]) ^ 0x80u);
  return t;
}

inline constexpr LevelTable kIq4LevelTable = make_level_table(tensor::kIq4Levels);
inline constexpr LevelTable kMxfp4LevelTable = make_level_table(tensor::kMxfp4Levels);

inline __m512i iq4_level_table() { return _mm512_load_si512(kIq4LevelTable.bytes); }

}  // namespace
}  // namespace lumen::backend::cpu::detail
