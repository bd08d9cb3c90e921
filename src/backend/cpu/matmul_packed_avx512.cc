// The 512-bit kernels for packed weights (matmul_packed.h), compiled with AVX-512 F/BW/VL/VNNI
// (set per source in CMakeLists.txt) and reached only when cpu_features says the CPU has them.
//
// Per block of 32 elements and group of 16 rows, the weights are 8 vectors of 64 unsigned bytes
// (lane r: 4 codes of row r), unpacked once and used for all the tokens of the tile; for a
// token, 8 vpdpbusd against broadcast 4-byte pieces of its activation codes give the 16 rows'
// integer dot products, summed as integers into the rows' exact block sums; then one conversion
// and one FMA with (row scales x token scale) per block (Q4_1: and one FMA for the block's min
// term). This is the arithmetic of ggml's generic C dot products and of Lumen's scalar kernels,
// not the order of ggml's x86 ones (eight float partial sums per row, one per group of 4
// elements, which Lumen's AVX2 kernels keep): about 1.4 vector ops per 64 multiply-adds against
// 3. On a small 4-bit model any rounding change can flip an 8-bit activation code and move logits
// far more than the rounding, so these results are held to the model's f32 function rather than
// to llama.cpp's rounding (docs/backends.md, "Two roundings").
// The unsigned codes' offset (8 for Q4_0, 16 for Q5_0, 128 for the sign-flipped Q8_0, IQ4_NL and MXFP4) is removed
// exactly by starting the integer sums at -offset * sum(activation codes), which the packed activation row carries.
#include "backend/cpu/matmul_kernels.h"

#include <cstring>
#include <type_traits>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__) && defined(__F16C__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as the unused merge source, which its
// -Wmaybe-uninitialized reports as a use of an uninitialized value (GCC bug 105593).
#if !defined(__clang__)  // a GCC-only warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "backend/cpu/matmul_packed.h"
#include "backend/cpu/packed_avx512_rows.h"
#include "backend/cpu/x86_simd.h"
#include "tensor/block_formats.h"
#include "tensor/fp16.h"
#define LUMEN_HAVE_PACKED_AVX512 1
#endif

namespace lumen::backend::cpu::detail {

#ifdef LUMEN_HAVE_PACKED_AVX512
namespace {

using tensor::DType;

// A format: how the 8 weight vectors of a block come out of its packed codes, and which 4 bytes
// of the activation block each one meets. Vector k holds elements 4 kLane[k] .. 4 kLane[k] + 3.
struct NibbleCodes {  // Q4_0, Q4_1: chunk c holds elements 4c.. (low) and 16 + 4c.. (high)
  static constexpr size_t kQsBytes = 256;
  static void weights(const uint8_t* qs, __m512i w[8]) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    for (int c = 0; c < 4; ++c) {
      const __m512i packed = load_512(qs + 64 * c);
      w[2 * c] = _mm512_and_si512(packed, low);
      w[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low);
    }
  }
  static constexpr int kLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};
};

struct FiveBitCodes {  // Q5_0: NibbleCodes' 4 chunks, then a chunk of each row's 32 high bits
  static constexpr size_t kQsBytes = 320;
  // Adds 16 to the code bytes whose high bit is set. Elements 4c.. (and 16 + 4c..) have their
  // bits in byte c / 2 (and 2 + c / 2) of the row's qh word, at bit offset 4 (c % 2) upward:
  // vpshufb copies that byte into all 4 bytes of the row's lane, vptestmb picks one bit per
  // byte, and a masked byte add sets bit 4 (free in a nibble).
  static __m512i add_fifth_bits(__m512i codes, __m512i qh, int byte, int offset) {
    const __m512i select = _mm512_add_epi8(_mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0),
                                           _mm512_set1_epi8(static_cast<char>(byte)));
    const __m512i bits = _mm512_set1_epi32(static_cast<int>(0x08040201u << offset));
    const __mmask64 set = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, select), bits);
    return _mm512_mask_add_epi8(codes, set, codes, _mm512_set1_epi8(0x10));
  }
  static void weights(const uint8_t* qs, __m512i w[8]) {
    NibbleCodes::weights(qs, w);
    const __m512i qh = load_512(qs + 256);
    for (int c = 0; c < 4; ++c) {
      w[2 * c] = add_fifth_bits(w[2 * c], qh, c / 2, 4 * (c % 2));              // elements 4c..
      w[2 * c + 1] = add_fifth_bits(w[2 * c + 1], qh, 2 + c / 2, 4 * (c % 2));  // 16 + 4c..
    }
  }
  static constexpr int kLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};
};

struct ByteCodes {  // Q8_0: chunk c holds elements 4c..4c+3, sign-flipped
  static constexpr size_t kQsBytes = 512;
  static void weights(const uint8_t* qs, __m512i w[8]) {
    for (int c = 0; c < 8; ++c) w[c] = load_512(qs + 64 * c);
  }
  static constexpr int kLane[8] = {0, 1, 2, 3, 4, 5, 6, 7};
};

// IQ4_NL and MXFP4: Q4_0's nibbles (packed as Q4_0's), each looked up in the 16 levels by vpshufb
// (within each 128-bit lane, so the table is repeated in all four) from a table already
// sign-flipped: the weights come out as level + 128, unsigned, as Q8_0's flipped codes do.
template <const LevelTable& kTable>
struct LevelCodes {
  static constexpr size_t kQsBytes = 256;
  static void weights(const uint8_t* qs, __m512i w[8]) {
    NibbleCodes::weights(qs, w);
    const __m512i table = _mm512_load_si512(kTable.bytes);
    for (int k = 0; k < 8; ++k) w[k] = _mm512_shuffle_epi8(table, w[k]);
  }
  static constexpr int kLane[8] = {0, 4, 1, 5, 2, 6, 3, 7};
};

// kOffset: the unsigned codes' offset. kHasMin: Q4_1's x = d q + m.
struct Q4_0Packed : NibbleCodes {
  static constexpr int kOffset = 8;
  static constexpr bool kHasMin = false;
  static constexpr size_t kScaleBytes = 32;
  static constexpr int kExtraWords = 1;  // -8 * sum of the block's codes
};

struct Q4_1Packed : NibbleCodes {
  static constexpr int kOffset = 0;
  static constexpr bool kHasMin = true;
  static constexpr size_t kScaleBytes = 64;
  static constexpr int kExtraWords = 1;  // the Q8_1 block's s
};

struct Q5_0Packed : FiveBitCodes {
  static constexpr int kOffset = 16;
  static constexpr bool kHasMin = false;
  static constexpr size_t kScaleBytes = 32;
  static constexpr int kExtraWords = 1;  // -16 * sum of the block's codes
};

struct Q8_0Packed : ByteCodes {
  static constexpr int kOffset = 128;
  static constexpr bool kHasMin = false;
  static constexpr size_t kScaleBytes = 32;
  static constexpr int kExtraWords = 1;  // -128 * sum of the block's codes
};

struct IQ4_NLPacked : LevelCodes<kIq4LevelTable> {
  static constexpr int kOffset = 128;
  static constexpr bool kHasMin = false;
  static constexpr size_t kScaleBytes = 32;
  static constexpr int kExtraWords = 1;  // -128 * sum of the block's codes
};

// MXFP4 (gpt-oss's experts): its block scale is one exponent byte a row, 2^(e - 128), so the
// packed copy is as large as the file's blocks (17 bytes), and the 16 rows' scales come from 16
// bytes: tensor::mxfp4_scale's bits (e - 1 in the exponent field; 2^-128 and 2^-127 subnormal
// for e = 0 and 1), 16 lanes at once.
struct MXFP4Packed : LevelCodes<kMxfp4LevelTable> {
  static constexpr int kOffset = 128;
  static constexpr bool kHasMin = false;
  static constexpr size_t kScaleBytes = 16;
  static constexpr int kExtraWords = 1;  // -128 * sum of the block's codes
  static __m512 scales(const uint8_t* sc) {
    const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    const __mmask16 is_normal = _mm512_cmpge_epu32_mask(e, _mm512_set1_epi32(2));
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(is_normal, subnormal, normal));
  }
};

// A block's 16 row scales: the format's own rule where it has one, else 16 f16 d.
template <typename F>
inline __m512 row_scales(const uint8_t* sc) {
  if constexpr (requires { F::scales(sc); }) {
    return F::scales(sc);
  } else {
    return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc)));
  }
}

// Decode streams each weight once from memory, and the hardware prefetcher alone leaves a
// single-threaded stream far below the read bandwidth. Measured on the llama-1B output matrix
// (147 MB, one thread): prefetching into L2 8 KiB ahead gives 19 GB/s against 12 GB/s 2 KiB
// ahead into L1 (which has too few miss buffers for that distance). Since the packed matrices
// share 2 MiB pages (packed_arena.h), 12 KiB pays on small models: matmul_bench Stream (SmolLM2's
// shape, one token) 1 thread 18.5-19.5 against 16.6-17.0 GB/s at 8 KiB (2 threads the same);
// SmolLM2 tg128, 8 alternated pairs each, +7% on 1 and on 2 threads; llama-1B Q4_0 tg
// unchanged (1.004). 16 KiB was the worst distance tried (12 and 20 GB/s), 32 KiB between.
//
// Each line of codes is also asked for a second time, kPrefetchFar ahead. One distance alone
// stalls (a single one at 16 or 32 KiB did worse than 12), but the pair does far better than
// either: the far request starts the line's trip early, and the near one, by then usually a hit,
// asks again for the lines the far one lost. matmul_bench Stream, 4 alternations: 1 thread
// 25.7-28.2 GB/s against 16.3-18.0, 2 threads 30.5-36.1 against 24.5-29.0. SmolLM2 tg128,
// alternated pairs, 2 threads: far at 36 KiB with a T2 hint against no far request 1.107 (8 of
// 8); with T2 hints, 44 KiB beat 32 (0.985) and 60 (0.953); with T1, 36 KiB beat 44 (1.123,
// 5 of 6) and 36 KiB T2 (5 of 8).
constexpr size_t kPrefetchAhead = 12288;
constexpr size_t kPrefetchFar = kPrefetchAhead + 24576;

template <typename F>
inline void prefetch_ahead(const uint8_t* qs, const uint8_t* sc, int64_t b) {
  // The same number of blocks ahead in both runs of a group (codes, then scales). Near the
  // group's end the codes' prefetches run on into its scales and the next group, which are
  // read next anyway.
  constexpr size_t kBlocksAhead = kPrefetchAhead / F::kQsBytes;
  for (size_t line = 0; line < F::kQsBytes; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(qs + line + kPrefetchAhead), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(qs + line + kPrefetchFar), _MM_HINT_T1);
  }
  constexpr int64_t kBlocksPerLine = 64 / F::kScaleBytes;
  if (b % kBlocksPerLine == 0) {
    _mm_prefetch(reinterpret_cast<const char*>(sc + kBlocksAhead * F::kScaleBytes), _MM_HINT_T1);
  }
}

template <typename F, int NT>
void packed_tile(const uint8_t* group, int64_t cols, const uint8_t* x0, size_t x_stride, float* out) {
  const int64_t blocks = cols / tensor::kLegacyBlock;
  const uint8_t* scales = group + F::kQsBytes * static_cast<size_t>(blocks);
  const ActivationRow x = activation_row(x0, cols);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* qs = group + F::kQsBytes * static_cast<size_t>(b);
    const uint8_t* sc = scales + F::kScaleBytes * static_cast<size_t>(b);
    prefetch_ahead<F>(qs, sc, b);
    __m512i w[8];
    F::weights(qs, w);
    const __m512 wd = row_scales<F>(sc);
    __m512 wm = _mm512_setzero_ps();
    if constexpr (F::kHasMin) wm = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc + 32)));
    const uint8_t* xq = x.codes + 32 * b;
    const uint8_t* xd = x.d + 4 * b;
    const uint8_t* xe = x.extra + 4 * F::kExtraWords * b;
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const size_t at = x_stride * static_cast<size_t>(t);
      // One chain of vpdpbusd per token: with several tokens in flight their chains overlap.
      // With one or two tokens, two chains per token, so that one chain's latency does not
      // bound the loop.
      constexpr bool kTwoChains = NT <= 2;
      __m512i s0 = F::kOffset != 0 ? _mm512_set1_epi32(load_i32(xe + at)) : _mm512_setzero_si512();
      __m512i s1 = _mm512_setzero_si512();
      for (int k = 0; k < 8; k += 2) {
        s0 = _mm512_dpbusd_epi32(s0, w[k], _mm512_set1_epi32(load_i32(xq + at + 4 * F::kLane[k])));
        if constexpr (kTwoChains) {
          s1 = _mm512_dpbusd_epi32(s1, w[k + 1], _mm512_set1_epi32(load_i32(xq + at + 4 * F::kLane[k + 1])));
        } else {
          s0 = _mm512_dpbusd_epi32(s0, w[k + 1], _mm512_set1_epi32(load_i32(xq + at + 4 * F::kLane[k + 1])));
        }
      }
      const __m512 dots = _mm512_cvtepi32_ps(kTwoChains ? _mm512_add_epi32(s0, s1) : s0);
      const __m512 scale = _mm512_mul_ps(wd, _mm512_set1_ps(load_f32(xd + at)));
      if constexpr (F::kHasMin) acc[t] = _mm512_fmadd_ps(wm, _mm512_set1_ps(load_f32(xe + at)), acc[t]);
      acc[t] = _mm512_fmadd_ps(dots, scale, acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(out + t * kPackRows, acc[t]);
}

// The packed activation row of f32 values: the codes, d and extras the type's quantizer
// (quantize_act_q8_0 / q8_1: the same abs_max and quantize_32) and a conversion of its row
// would give, written in one pass. Profiled on a 512-token prefill of SmolLM2, the two passes
// (a Q8 row, then its copy into this layout through a stack block and software f16 conversions)
// took a tenth of the step.
template <typename F>
void quantize_packed(const float* x, uint8_t* dst, int64_t cols) {
  const int64_t blocks = cols / tensor::kLegacyBlock;
  uint8_t* d_out = dst + cols;
  uint8_t* extra_out = d_out + 4 * blocks;
  // The other threads read this buffer in the previous matmul, so each line written here must
  // first be taken back from their caches. Stores do that one line at a time (profiled: the
  // store below was most of this function, a few percent of a small model's decode step);
  // asking for every line in writable state up front (PREFETCHW) overlaps those round-trips.
  const uint8_t* end = extra_out + 4 * F::kExtraWords * blocks;
  for (const uint8_t* line = dst; line < end; line += 64) __builtin_prefetch(line, 1, 3);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + tensor::kLegacyBlock * b;
    const float amax = abs_max(xb, tensor::kLegacyBlock);
    const float d = amax / 127.0f;
    const int sum = quantize_32(xb, amax != 0.0f ? 127.0f / amax : 0.0f, reinterpret_cast<int8_t*>(dst + 32 * b));
    // The Q8 block's f16 scale, widened back (vcvtps2ph rounds to nearest even as
    // tensor::float_to_fp16 does; widening is exact).
    const float d_stored = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    std::memcpy(d_out + 4 * b, &d_stored, 4);
    uint8_t* extra = extra_out + 4 * F::kExtraWords * b;
    if constexpr (F::kHasMin) {
      const float s = _cvtsh_ss(_cvtss_sh(static_cast<float>(sum) * d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      std::memcpy(extra, &s, 4);
    } else {
      const int32_t correction = -F::kOffset * sum;  // -offset times the sum of the block's codes
      std::memcpy(extra, &correction, 4);
    }
  }
}

template <typename F>
constexpr PackedKernels make_packed_kernels() {
  return PackedKernels{&quantize_packed<F>, F::kExtraWords,
                       {&packed_tile<F, 1>, &packed_tile<F, 2>, &packed_tile<F, 3>, &packed_tile<F, 4>,
                        &packed_tile<F, 5>, &packed_tile<F, 6>, &packed_tile<F, 7>, &packed_tile<F, 8>}};
}

static_assert(kMaxPackedTokens == 8);

}  // namespace

const PackedKernels* packed_kernels(tensor::DType type) {
  static constexpr PackedKernels kQ4_0 = make_packed_kernels<Q4_0Packed>();
  static constexpr PackedKernels kQ4_1 = make_packed_kernels<Q4_1Packed>();
  static constexpr PackedKernels kQ5_0 = make_packed_kernels<Q5_0Packed>();
  static constexpr PackedKernels kQ8_0 = make_packed_kernels<Q8_0Packed>();
  static constexpr PackedKernels kIQ4_NL = make_packed_kernels<IQ4_NLPacked>();
  static constexpr PackedKernels kMXFP4 = make_packed_kernels<MXFP4Packed>();
  static_assert(Q4_0Packed::kQsBytes == 16 * kPackRows && Q8_0Packed::kQsBytes == 32 * kPackRows &&
                Q5_0Packed::kQsBytes == 20 * kPackRows);
  switch (type) {
    case DType::Q4_0: return &kQ4_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q8_0: return &kQ8_0;
    case DType::IQ4_NL: return &kIQ4_NL;
    case DType::MXFP4: return &kMXFP4;
    default: return packed_kquant_kernels(type);
  }
}

#else

const PackedKernels* packed_kernels(tensor::DType) { return nullptr; }

#endif

}  // namespace lumen::backend::cpu::detail
