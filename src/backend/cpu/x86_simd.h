#pragma once
// 256-bit building blocks shared by the AVX2 and the AVX-512 kernel units (x86_tiles.h), plus
// the SIMD activation quantizers. Included only by translation units compiled with at least
// -mavx2 -mfma -mf16c; when the unit also has AVX-512 VNNI + VL, the integer dot products use
// vpdpbusd / vpdpwssd (one instruction instead of two or three, on the same 256-bit registers).
//
// Everything is in an anonymous namespace: each unit gets its own copy built for its own
// instruction set, so no AVX-512 code can be shared into the AVX2 unit by the linker.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define LUMEN_X86_VNNI 1
#else
#define LUMEN_X86_VNNI 0
#endif

namespace lumen::backend::cpu::detail {
namespace {

inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

inline __m256i load_256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// acc + sum over groups of four of u8 x s8 products, per int32 lane. Without VNNI the u8 x s8
// pair sums go through int16, which is exact while u * |s| * 2 < 32768 (codes up to 63).
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
#if LUMEN_X86_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  const __m256i pairs = _mm256_maddubs_epi16(u, s);
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#endif
}

// acc + pairwise int16 products summed into int32 lanes.
inline __m256i dot_i16(__m256i acc, __m256i a, __m256i b) {
#if LUMEN_X86_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// The 32 nibbles of a legacy block as bytes: low nibbles (elements 0..15) then high ones.
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Byte j = 0x10 where bit j of the 32-bit qh field is set: the fifth bit of Q5_0 / Q5_1 codes.
inline __m256i fifth_bits(const uint8_t* qh_ptr) {
  uint32_t qh;
  std::memcpy(&qh, qh_ptr, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(qh)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// ---- activation quantizers: bit-exact with cpu::quantize_activation_row (activation_quant.h),
// which follows llama.cpp's run-time quantizers: codes round half to even (the instruction's
// default mode) and the inverse scale is 127 / amax.

inline float abs_max(const float* x, int n) {  // n a multiple of 8
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + i)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Quantizes 32 values by `inverse` into int8 (clamped to +-127); returns the sum of the codes.
inline int quantize_32(const float* x, float inverse, int8_t* qs) {
  const __m256 scale = _mm256_set1_ps(inverse);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  __m256i q[4];
  for (int i = 0; i < 4; ++i) {
    const __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), scale),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    q[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
  }
  const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
  // packs interleaves the 128-bit lanes; the permute puts the 32 bytes back in order.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  const __m256i ordered = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), ordered);
  return hsum_i32(sum);
}

inline void quantize_act_q8_0(const float* x, void* dst, int64_t cols) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < cols / tensor::kLegacyBlock; ++b, x += 32, out += sizeof(tensor::BlockQ8_0)) {
    tensor::BlockQ8_0 block;
    const float amax = abs_max(x, 32);
    const float d = amax / 127.0f;
    quantize_32(x, amax != 0.0f ? 127.0f / amax : 0.0f, block.qs);
    block.d = tensor::float_to_fp16(d);
    std::memcpy(out, &block, sizeof(block));
  }
}

inline void quantize_act_q8_1(const float* x, void* dst, int64_t cols) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < cols / tensor::kLegacyBlock; ++b, x += 32, out += sizeof(tensor::BlockQ8_1)) {
    tensor::BlockQ8_1 block;
    const float amax = abs_max(x, 32);
    const float d = amax / 127.0f;
    const int sum = quantize_32(x, amax != 0.0f ? 127.0f / amax : 0.0f, block.qs);
    block.d = tensor::float_to_fp16(d);
    block.s = tensor::float_to_fp16(static_cast<float>(sum) * d);
    std::memcpy(out, &block, sizeof(block));
  }
}

inline void quantize_act_q8_k(const float* x, void* dst, int64_t cols) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < cols / tensor::kSuperBlock; ++b, x += 256, out += sizeof(tensor::BlockQ8_K)) {
    tensor::BlockQ8_K block{};
    const float amax = abs_max(x, 256);
    if (amax != 0.0f) {
      // The scale carries the sign of the first element of largest magnitude.
      float max = amax;
      for (int i = 0; i < 256; ++i) {
        if (x[i] == amax || x[i] == -amax) {
          max = x[i];
          break;
        }
      }
      const float iscale = -127.0f / max;
      for (int i = 0; i < 8; ++i) quantize_32(x + 32 * i, iscale, block.qs + 32 * i);
      block.d = 1.0f / iscale;
    }
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += block.qs[16 * s + l];
      block.bsums[s] = static_cast<int16_t>(sum);
    }
    std::memcpy(out, &block, sizeof(block));
  }
}

}  // namespace
}  // namespace lumen::backend::cpu::detail
