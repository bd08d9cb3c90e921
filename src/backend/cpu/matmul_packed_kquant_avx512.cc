// The 512-bit kernels for packed Q4_K, Q5_K, Q6_K and IQ4_XS weights (layouts in matmul_packed.h), compiled
// with AVX-512 F/BW/VL/VNNI like matmul_packed_avx512.cc and reached only through
// packed_kernels().
//
// Why. The file-layout K-quant kernels (x86_tiles.h) unpack each row's super-block into 256-bit
// vectors and pay two instructions (vpmaddubsw, vpdpwssd) per 32 multiply-adds; Gemma 3's Q4_K
// and Q6_K matrices ran at a quarter of the int8 roof in prefill while its packed Q5_0 ones ran
// at half. Here, as for the legacy types, lane r of every vector is row r of a 16-row group and
// one vpdpbusd does 64 multiply-adds.
//
// Arithmetic, per super-block and token: each sub-block's 16 integer dot products (vpdpbusd
// against broadcast 4-byte pieces of the token's Q8_K codes) are multiplied by the 16 rows'
// sub-block scales (vpmulld) and summed as integers; Q4_K's min term sum_j m_j * bsum_j is
// another exact integer (vpdpwssd over pairs of sub-blocks), and Q6_K's offset of 32 starts each
// sub-block's sum at -32 x the token's sum of its 16 codes. Then two conversions and FMAs with
// d x (the token's d) and dmin x d. These are the exact integer super-block sums of ggml's
// generic C dot product, not the lane order of its x86 ones, so, as for the other packed types,
// results are held to the model's function rather than to llama.cpp's bits
// (matmul_rounds_like_ggml_simd). Bounds: |Q4_K sum| <= 8 x 63 x 32 x 15 x 127 < 2^25 (Q5_K,
// with codes up to 31: < 2^26), |Q6_K sum| <= 16 x 128 x 16 x 32 x 127 < 2^27: no int32
// overflow.
//
// Packed activation rows (matmul_kernels.h) for these types: the Q8_K row's codes; its f32 d in
// each of the super-block's eight d slots (the kernels read the first); extra words per 32
// elements: Q4_K and Q5_K one (words 0..3 of a super-block are its eight 32-element code sums
// as int16 pairs, words 4..7 zero), Q6_K two (word j is -32 x the sum of 16-element group j's
// codes).
#include "backend/cpu/matmul_kernels.h"

#include <cstring>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
#if !defined(__clang__)  // GCC bug 105593, as in matmul_packed_avx512.cc
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "backend/cpu/matmul_packed.h"
#include "backend/cpu/packed_avx512_rows.h"
#include "backend/cpu/x86_simd.h"
#include "tensor/block_formats.h"
#define LUMEN_HAVE_PACKED_KQUANT_AVX512 1
#endif

namespace lumen::backend::cpu::detail {

#ifdef LUMEN_HAVE_PACKED_KQUANT_AVX512
namespace {

using tensor::DType;
using tensor::kSuperBlock;

// As matmul_packed_avx512.cc: decode streams each weight once, and the prefetcher alone leaves
// one thread's stream far below the read bandwidth. These kernels need a longer distance than
// Q4_0's 8 KiB (measured, matmul_bench's decode of a 128256 x 2048 Q4_K matrix from memory, 1
// thread: 12-14 GB/s at 8 KiB ahead, 14-16 at 16 KiB, 17.4-17.7 at 32 KiB, no better at 64 KiB;
// 2 threads 23.6 -> 25.2-26.1 GB/s).
constexpr size_t kPrefetchAhead = 32768;

// One super-block of codes and its scales, both prefetched about kPrefetchAhead ahead.
template <typename F>
inline void prefetch_ahead(const uint8_t* qs, const uint8_t* sc) {
  for (size_t line = 0; line < F::kQsBytes; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(qs + line + kPrefetchAhead), _MM_HINT_T1);
  }
  constexpr size_t kSupersAhead = kPrefetchAhead / F::kQsBytes;
  for (size_t line = 0; line < F::kScaleBytes; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(sc + line + kSupersAhead * F::kScaleBytes), _MM_HINT_T1);
  }
}

// The dot products of 8 weight vectors w (elements 4 lane[k]... of a 32-element piece) with a
// token's codes xq, added to `sum` (one chain, or two when few tokens leave latency exposed).
template <bool kTwoChains>
inline __m512i dot_32(__m512i sum, const __m512i w[8], const int lane[8], const uint8_t* xq) {
  __m512i other = _mm512_setzero_si512();
  for (int k = 0; k < 8; k += 2) {
    sum = _mm512_dpbusd_epi32(sum, w[k], bcast(xq + 4 * lane[k]));
    if constexpr (kTwoChains) {
      other = _mm512_dpbusd_epi32(other, w[k + 1], bcast(xq + 4 * lane[k + 1]));
    } else {
      sum = _mm512_dpbusd_epi32(sum, w[k + 1], bcast(xq + 4 * lane[k + 1]));
    }
  }
  return kTwoChains ? _mm512_add_epi32(sum, other) : sum;
}

// ---- Q4_K ----

struct Q4KPacked {
  static constexpr size_t kQsBytes = 128 * kPackRows;
  static constexpr size_t kScaleBytes = 20 * kPackRows;  // scales, mins, d, dmin
  static constexpr int kExtraWords = 1;

  // The int16 pairs (bsum_2i, bsum_2i+1) of a super-block's eight 32-element code sums.
  static void write_extras(const int16_t bsums[16], uint8_t* extra) {
    for (int i = 0; i < 4; ++i) {
      const int16_t pair[2] = {static_cast<int16_t>(bsums[4 * i] + bsums[4 * i + 1]),
                               static_cast<int16_t>(bsums[4 * i + 2] + bsums[4 * i + 3])};
      std::memcpy(extra + 4 * i, pair, 4);
    }
    std::memset(extra + 16, 0, 16);
  }
};

// Q5_K: Q4_K with a fifth bit per code in 8 more chunks of codes; scales, mins and activations
// as Q4_K's.
struct Q5KPacked : Q4KPacked {
  static constexpr size_t kQsBytes = 160 * kPackRows;
};

// Q5_K's fifth bits: bit j of byte i of qh chunk c is that of element 4c + i of sub-block j,
// moved to bit 4 by a 16-bit shift (bits carried across bytes fall outside the 0x10 mask).
inline __m512i fifth_bits(__m512i qh, int sub) {
  const __m512i moved = sub <= 4 ? _mm512_slli_epi16(qh, 4 - sub) : _mm512_srli_epi16(qh, sub - 4);
  return _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
}

// Chunk 8p + c holds bytes 4c.. of the rows' qs[32p..]: low nibbles are elements 64p + 4c..
// (sub-block 2p), high nibbles 64p + 32 + 4c.. (sub-block 2p + 1).
template <typename F, int NT>
void q4_k_tile(const uint8_t* group, int64_t cols, const uint8_t* x0, size_t x_stride, float* out) {
  constexpr bool kFifthBits = F::kQsBytes != Q4KPacked::kQsBytes;
  constexpr bool kTwoChains = NT <= 2;
  constexpr int kLane[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const int64_t supers = cols / kSuperBlock;
  const uint8_t* scales = group + F::kQsBytes * static_cast<size_t>(supers);
  const ActivationRow x = activation_row(x0, cols);
  const __m512i low = _mm512_set1_epi8(0x0f);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* qs = group + F::kQsBytes * static_cast<size_t>(s);
    const uint8_t* sc = scales + F::kScaleBytes * static_cast<size_t>(s);
    prefetch_ahead<F>(qs, sc);
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int sub = 0; sub < 8; ++sub) {
      const uint8_t* chunks = qs + 512 * (sub / 2);
      __m512i w[8];
      for (int c = 0; c < 8; ++c) {
        const __m512i packed = load_512(chunks + 64 * c);
        w[c] = _mm512_and_si512(sub % 2 == 0 ? packed : _mm512_srli_epi16(packed, 4), low);
        if constexpr (kFifthBits) {
          w[c] = _mm512_or_si512(w[c], fifth_bits(load_512(qs + Q4KPacked::kQsBytes + 64 * c), sub));
        }
      }
      const __m512i scale = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16 * sub)));
      const uint8_t* xq = x.codes + kSuperBlock * s + 32 * sub;
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const __m512i dot =
            dot_32<kTwoChains>(_mm512_setzero_si512(), w, kLane, xq + x_stride * static_cast<size_t>(t));
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot, scale));
      }
    }
    __m512i mins[4];
    for (int i = 0; i < 4; ++i) {
      mins[i] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 128 + 32 * i)));
    }
    const __m512 wd = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 256)));
    const __m512 wdmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 288)));
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const size_t at = x_stride * static_cast<size_t>(t);
      const uint8_t* xe = x.extra + at + 4 * F::kExtraWords * 8 * s;
      __m512i msum = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mins[0], bcast(xe));
      msum = _mm512_dpwssd_epi32(msum, mins[1], bcast(xe + 4));
      msum = _mm512_dpwssd_epi32(msum, mins[2], bcast(xe + 8));
      msum = _mm512_dpwssd_epi32(msum, mins[3], bcast(xe + 12));
      const __m512 xd = _mm512_set1_ps(load_f32(x.d + at + 4 * 8 * s));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(wd, xd), acc[t]);
      acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(wdmin, xd), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * kPackRows, acc[t]);
}

// ---- Q6_K ----

struct Q6KPacked {
  static constexpr size_t kQsBytes = 192 * kPackRows;
  static constexpr size_t kScaleBytes = 18 * kPackRows;
  static constexpr int kExtraWords = 2;

  // -32 x each 16-element group's code sum: the start of that sub-block's integer sum.
  static void write_extras(const int16_t bsums[16], uint8_t* extra) {
    for (int j = 0; j < 16; ++j) {
      const int32_t start = -32 * bsums[j];
      std::memcpy(extra + 4 * j, &start, 4);
    }
  }
};

// Weight vector k of a 32-element piece: its nibbles (chunk k / 2, low for even k, high for odd)
// with the top two bits from chunk k / 4 of the top-bit chunks, bits 2 (k % 4) upward, moved to
// bits 4 and 5. 16-bit shifts carry bits across bytes, which the 0x30 mask drops.
inline __m512i q6_k_vector(__m512i nibbles, __m512i tops, int k) {
  const __m512i nibble = _mm512_and_si512(k % 2 == 0 ? nibbles : _mm512_srli_epi16(nibbles, 4), _mm512_set1_epi8(0x0f));
  __m512i top;
  switch (k % 4) {
    case 0: top = _mm512_slli_epi16(tops, 4); break;
    case 1: top = _mm512_slli_epi16(tops, 2); break;
    case 2: top = tops; break;
    default: top = _mm512_srli_epi16(tops, 2); break;
  }
  // nibble | (top & 0x30)
  return _mm512_ternarylogic_epi32(nibble, top, _mm512_set1_epi8(0x30), 0xf8);
}

template <int NT>
void q6_k_tile(const uint8_t* group, int64_t cols, const uint8_t* x0, size_t x_stride, float* out) {
  using F = Q6KPacked;
  // Vector k holds elements 4 kLane[k]..: even vectors the first 16-element sub-block, odd ones
  // the second, so each sub-block is one chain of four.
  constexpr int kLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const int64_t supers = cols / kSuperBlock;
  const uint8_t* scales = group + F::kQsBytes * static_cast<size_t>(supers);
  const ActivationRow x = activation_row(x0, cols);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* qs = group + F::kQsBytes * static_cast<size_t>(s);
    const uint8_t* sc = scales + F::kScaleBytes * static_cast<size_t>(s);
    prefetch_ahead<F>(qs, sc);
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int b = 0; b < 8; ++b) {
      const uint8_t* piece = qs + 384 * b;
      const __m512i tops[2] = {load_512(piece + 256), load_512(piece + 320)};
      __m512i w[8];
      for (int k = 0; k < 8; ++k) w[k] = q6_k_vector(load_512(piece + 64 * (k / 2)), tops[k / 4], k);
      const __m512i scale_first =
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16 * (2 * b))));
      const __m512i scale_second =
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16 * (2 * b + 1))));
      const uint8_t* xq = x.codes + kSuperBlock * s + 32 * b;
      const uint8_t* xe = x.extra + 4 * F::kExtraWords * (8 * s + b);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const size_t at = x_stride * static_cast<size_t>(t);
        __m512i first = bcast(xe + at), second = bcast(xe + at + 4);
        for (int k = 0; k < 8; k += 2) {
          first = _mm512_dpbusd_epi32(first, w[k], bcast(xq + at + 4 * kLane[k]));
          second = _mm512_dpbusd_epi32(second, w[k + 1], bcast(xq + at + 4 * kLane[k + 1]));
        }
        isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(_mm512_mullo_epi32(first, scale_first),
                                                             _mm512_mullo_epi32(second, scale_second)));
      }
    }
    const __m512 wd = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 256)));
    for (int t = 0; t < NT; ++t) {
      const __m512 xd = _mm512_set1_ps(load_f32(x.d + x_stride * static_cast<size_t>(t) + 4 * 8 * s));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(wd, xd), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * kPackRows, acc[t]);
}

// ---- IQ4_XS ----
// Per super-block 8 sub-blocks of 32 codes, each in Q4_0's packed nibble layout (4 chunks: chunk c
// holds bytes 4c.. of the rows' 16 code bytes; low nibbles are elements 4c.., high ones 16 + 4c..),
// looked up in a sign-flipped level table (level + 128, unsigned); then the 16 rows' sub-block
// scales ls - 32 as int8 (8 x 16 bytes) and their f16 d. A sub-block's integer sum starts at
// -128 x the token's sum of its 32 codes (the extra word), so it is the exact sum of level x code;
// times the rows' scales (vpmulld) into the super-block's integer sum: at most 8 x 32 x 32 x 127
// x 127 < 2^28.

struct IQ4XSPacked {
  static constexpr size_t kQsBytes = 128 * kPackRows;
  static constexpr size_t kScaleBytes = 10 * kPackRows;  // 8 scales, d
  static constexpr int kExtraWords = 1;

  static void write_extras(const int16_t bsums[16], uint8_t* extra) {
    for (int j = 0; j < 8; ++j) {
      const int32_t start = -128 * (bsums[2 * j] + bsums[2 * j + 1]);
      std::memcpy(extra + 4 * j, &start, 4);
    }
  }
};

template <int NT>
void iq4_xs_tile(const uint8_t* group, int64_t cols, const uint8_t* x0, size_t x_stride, float* out) {
  using F = IQ4XSPacked;
  constexpr bool kTwoChains = NT <= 2;
  constexpr int kLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // vector 2c: elements 4c.., 2c + 1: 16 + 4c..
  const int64_t supers = cols / kSuperBlock;
  const uint8_t* scales = group + F::kQsBytes * static_cast<size_t>(supers);
  const ActivationRow x = activation_row(x0, cols);
  const __m512i low = _mm512_set1_epi8(0x0f);
  const __m512i table = iq4_level_table();
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* qs = group + F::kQsBytes * static_cast<size_t>(s);
    const uint8_t* sc = scales + F::kScaleBytes * static_cast<size_t>(s);
    prefetch_ahead<F>(qs, sc);
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int sub = 0; sub < 8; ++sub) {
      const uint8_t* chunks = qs + 256 * sub;
      __m512i w[8];
      for (int c = 0; c < 4; ++c) {
        const __m512i packed = load_512(chunks + 64 * c);
        w[2 * c] = _mm512_shuffle_epi8(table, _mm512_and_si512(packed, low));
        w[2 * c + 1] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(packed, 4), low));
      }
      const __m512i scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16 * sub)));
      const uint8_t* xq = x.codes + kSuperBlock * s + 32 * sub;
      const uint8_t* xe = x.extra + 4 * F::kExtraWords * (8 * s + sub);
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) {
        const size_t at = x_stride * static_cast<size_t>(t);
        const __m512i dot = dot_32<kTwoChains>(bcast(xe + at), w, kLane, xq + at);
        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot, scale));
      }
    }
    const __m512 wd = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + 128)));
    for (int t = 0; t < NT; ++t) {
      const __m512 xd = _mm512_set1_ps(load_f32(x.d + x_stride * static_cast<size_t>(t) + 4 * 8 * s));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(wd, xd), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * kPackRows, acc[t]);
}

// ---- activations ----

// The packed row of f32 values for a K-quant: the Q8_K row of quantize_act_q8_k (the
// unpacked kernels' activations, byte for byte), laid out as above.
template <typename F>
void quantize_packed(const float* x, uint8_t* dst, int64_t cols) {
  const int64_t blocks = cols / tensor::kLegacyBlock;
  uint8_t* d_out = dst + cols;
  uint8_t* extra_out = d_out + 4 * blocks;
  // Taken back from the other threads' caches up front (see matmul_packed_avx512.cc).
  const uint8_t* end = extra_out + 4 * F::kExtraWords * blocks;
  for (const uint8_t* line = dst; line < end; line += 64) __builtin_prefetch(line, 1, 3);
  for (int64_t s = 0; s < cols / kSuperBlock; ++s) {
    tensor::BlockQ8_K block;
    quantize_act_q8_k(x + kSuperBlock * s, &block, kSuperBlock);
    std::memcpy(dst + kSuperBlock * s, block.qs, kSuperBlock);
    for (int i = 0; i < 8; ++i) std::memcpy(d_out + 4 * (8 * s + i), &block.d, 4);
    F::write_extras(block.bsums, extra_out + 4 * F::kExtraWords * 8 * s);
  }
}

static_assert(kMaxPackedTokens == 8);

}  // namespace

const PackedKernels* packed_kquant_kernels(tensor::DType type) {
  static constexpr PackedKernels kQ4K{
      &quantize_packed<Q4KPacked>,
      Q4KPacked::kExtraWords,
      {&q4_k_tile<Q4KPacked, 1>, &q4_k_tile<Q4KPacked, 2>, &q4_k_tile<Q4KPacked, 3>, &q4_k_tile<Q4KPacked, 4>,
       &q4_k_tile<Q4KPacked, 5>, &q4_k_tile<Q4KPacked, 6>, &q4_k_tile<Q4KPacked, 7>, &q4_k_tile<Q4KPacked, 8>}};
  static constexpr PackedKernels kQ5K{
      &quantize_packed<Q4KPacked>,  // the same rows: shared
      Q5KPacked::kExtraWords,
      {&q4_k_tile<Q5KPacked, 1>, &q4_k_tile<Q5KPacked, 2>, &q4_k_tile<Q5KPacked, 3>, &q4_k_tile<Q5KPacked, 4>,
       &q4_k_tile<Q5KPacked, 5>, &q4_k_tile<Q5KPacked, 6>, &q4_k_tile<Q5KPacked, 7>, &q4_k_tile<Q5KPacked, 8>}};
  static constexpr PackedKernels kQ6K{&quantize_packed<Q6KPacked>,
                                      Q6KPacked::kExtraWords,
                                      {&q6_k_tile<1>, &q6_k_tile<2>, &q6_k_tile<3>, &q6_k_tile<4>, &q6_k_tile<5>,
                                       &q6_k_tile<6>, &q6_k_tile<7>, &q6_k_tile<8>}};
  static constexpr PackedKernels kIQ4XS{&quantize_packed<IQ4XSPacked>,
                                        IQ4XSPacked::kExtraWords,
                                        {&iq4_xs_tile<1>, &iq4_xs_tile<2>, &iq4_xs_tile<3>, &iq4_xs_tile<4>,
                                         &iq4_xs_tile<5>, &iq4_xs_tile<6>, &iq4_xs_tile<7>, &iq4_xs_tile<8>}};
  switch (type) {
    case DType::IQ4_XS: return &kIQ4XS;
    case DType::Q4_K: return &kQ4K;
    case DType::Q5_K: return &kQ5K;
    case DType::Q6_K: return &kQ6K;
    default: return nullptr;
  }
}

#else

const PackedKernels* packed_kquant_kernels(tensor::DType) { return nullptr; }

#endif

}  // namespace lumen::backend::cpu::detail
