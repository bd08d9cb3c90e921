#pragma once
// The tile kernels of the x86 levels, written once on 256-bit vectors and compiled twice:
// matmul_avx2.cc (AVX2 + FMA + F16C) and matmul_avx512.cc (adds AVX-512 VNNI/VL/BW, which turns
// each u8 x s8 dot into one vpdpbusd and gives 32 vector registers for the accumulators).
//
// A tile is kTileRows weight rows x NT tokens. Per block, each weight row is unpacked once
// and multiplied into all NT activation rows, so prefill reuses the unpacked weights NT times.
#include <cstddef>
#include <type_traits>

#include "backend/cpu/kquant_decode.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/x86_legacy_formats.h"
#include "backend/cpu/x86_simd.h"

namespace lumen::backend::cpu::detail {
namespace {

using tensor::DType;

// ---- legacy 32-element formats against Q8_0 / Q8_1 (their blocks: x86_legacy_formats.h) ----

// The loops over the tile's tokens and rows carry `#pragma GCC unroll` so GCC can keep the
// accumulator arrays in registers (see attention_tiles_simd.h). The AVX2 build's 16 registers
// still spill some from 2 tokens on, but fewer per block (the AVX-512 build's 2-token tile
// none): LUMEN_ISA=avx2, one core, SmolLM2's FFN shape, 512-token GEMM Q4_0 64 -> 69, Q4_1
// 61-64 -> 66-67 GFLOP/s, same bits.
template <typename F, int NT>
void legacy_tile(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int64_t cols, float* out) {
  using XBlock = std::conditional_t<F::kHasMin, tensor::BlockQ8_1, tensor::BlockQ8_0>;
  constexpr size_t kWBytes = sizeof(typename F::Block);
  constexpr size_t kXBytes = sizeof(XBlock);
  constexpr size_t kXQs = offsetof(XBlock, qs);
  static_assert(kTileRows == 4, "the min term keeps one row per lane of a 4-lane vector");
  __m256 acc[kTileRows][NT];
  __m128 min_acc[NT];  // lane r: sum over blocks of m (row r) * s (this token)
#pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 16
    for (int r = 0; r < kTileRows; ++r) acc[r][t] = _mm256_setzero_ps();
    min_acc[t] = _mm_setzero_ps();
  }
  const int64_t blocks = cols / tensor::kLegacyBlock;
  const size_t next_tile = static_cast<size_t>(blocks) * kWBytes * kTileRows * 2;
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i act[NT], base[NT];
    __m256 act_d[NT];
    float act_s[NT];
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {
      const uint8_t* xb = x_rows[t] + b * kXBytes;
      act[t] = load_256(xb + kXQs);
      act_d[t] = _mm256_set1_ps(load_f16(xb));
      act_s[t] = F::kHasMin ? load_f16(xb + 2) : 0.0f;
      // base = -offset * sum(act) per lane, so dot(base, codes, act) = sum((code - offset) * act).
      base[t] = _mm256_setzero_si256();
      if constexpr (F::kOffset != 0) {
        base[t] = _mm256_sub_epi32(base[t], dot_u8s8(_mm256_setzero_si256(),
                                                     _mm256_set1_epi8(static_cast<char>(F::kOffset)), act[t]));
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < kTileRows; ++r) {
      const uint8_t* wb = w_rows[r] + b * kWBytes;
      // The hardware prefetcher does not see four interleaved row streams coming: fetch the
      // same block of the rows two tiles on (rows are contiguous, so 2 x kTileRows rows ahead),
      // two tiles' worth of time before they are needed. Measured on SmolLM2 and llama-1B
      // shapes: one tile ahead is too late, in-row prefetching misses each tile's start. Past
      // the end of the matrix a prefetch is harmless.
      _mm_prefetch(reinterpret_cast<const char*>(wb + next_tile), _MM_HINT_T0);
      const __m256i codes = F::codes(wb);
      // Scales as vectors: one vector multiply per pair instead of a scalar one plus a broadcast.
      const __m256 wd = _mm256_set1_ps(legacy_scale<F>(wb));
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t) {
        const __m256i dot = legacy_dot<F>(base[t], codes, act[t]);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(wd, act_d[t]), acc[r][t]);
      }
    }
    if constexpr (F::kHasMin) {
      const __m128 mins = _mm_setr_ps(load_f16(w_rows[0] + b * kWBytes + 2), load_f16(w_rows[1] + b * kWBytes + 2),
                                      load_f16(w_rows[2] + b * kWBytes + 2), load_f16(w_rows[3] + b * kWBytes + 2));
#pragma GCC unroll 16
      for (int t = 0; t < NT; ++t) min_acc[t] = _mm_fmadd_ps(mins, _mm_set1_ps(act_s[t]), min_acc[t]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < NT; ++t) {
    alignas(16) float mins[kTileRows];
    _mm_store_ps(mins, min_acc[t]);
#pragma GCC unroll 16
    for (int r = 0; r < kTileRows; ++r) out[t * kTileRows + r] = hsum(acc[r][t]) + mins[r];
  }
}

// ---- K-quants against Q8_K, through the uniform DecodedSuper form ----

#include "backend/cpu/kquant_registers_x86.h"

// Each row's super-block is unpacked once and used for all nt tokens (up to a whole task's),
// since unpacking costs about as much as several tokens' dot products.
template <KquantRegistersFn unpack, size_t kBlockBytes>
void kquant_panel(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int nt, int64_t cols,
                  float* out) {
  constexpr size_t kXBytes = sizeof(tensor::BlockQ8_K);
  // The super-block of the rows two tiles on, fetched as the legacy tiles fetch theirs (the
  // hardware prefetcher does not follow four interleaved row streams): measured on one core
  // (bench/matmul_bench, decode of 8192 x 2048 and 2048 x 8192), Q6_K 6.8-14 -> 25 GB/s.
  const size_t next_tile = static_cast<size_t>(cols / tensor::kSuperBlock) * kBlockBytes * kTileRows * 2;
  __m256 acc[kTileRows][kMaxPanelTokens];
  for (int r = 0; r < kTileRows; ++r) {
    for (int t = 0; t < nt; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  KquantRegisters ws;
  const int64_t blocks = cols / tensor::kSuperBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int r = 0; r < kTileRows; ++r) {
      // maddubs pairs elements within a 128-bit lane, so in the int16 products of 32 elements
      // lanes 0..7 belong to sub-block 2k and lanes 8..15 to 2k + 1 (ws.scales' layout).
      const uint8_t* ahead = w_rows[r] + static_cast<size_t>(b) * kBlockBytes + next_tile;
      for (size_t line = 0; line < kBlockBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
      }
      unpack(w_rows[r], b, ws);
      for (int t = 0; t < nt; ++t) {
        const uint8_t* xb = x_rows[t] + b * kXBytes;
        float xd;
        std::memcpy(&xd, xb, 4);
        const uint8_t* xqs = xb + offsetof(tensor::BlockQ8_K, qs);
        __m256i sum = _mm256_setzero_si256();
        for (int k = 0; k < 8; ++k) {
          sum = dot_i16(sum, _mm256_maddubs_epi16(ws.codes[k], load_256(xqs + 32 * k)), ws.scales[k]);
        }
        const __m256i min_sum =
            _mm256_madd_epi16(ws.mins, load_256(xb + offsetof(tensor::BlockQ8_K, bsums)));
        __m256 a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(ws.d * xd), acc[r][t]);
        acc[r][t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(min_sum), _mm256_set1_ps(ws.dmin * xd), a);
      }
    }
  }
  for (int t = 0; t < nt; ++t) {
    for (int r = 0; r < kTileRows; ++r) out[t * kTileRows + r] = hsum(acc[r][t]);
  }
}

template <KquantRegistersFn unpack, size_t kBlockBytes, int NT>
void kquant_tile(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int64_t cols, float* out) {
  kquant_panel<unpack, kBlockBytes>(w_rows, x_rows, NT, cols, out);
}

// ---- IQ4_XS against Q8_K ----
// A sub-block of 32 levels is one vector. Levels reach -127, so u8 x s8 pairs could saturate
// int16 if the codes were offset to u8: the sign moves onto the activation instead (|level| x
// +-act, pair sums at most 2 x 127 x 127), and the int16 pairs are multiplied by the sub-block's
// scale ls - 32 into int32 lanes. A lane sums at most 8 sub-blocks x 2 pairs x 32258 x 32 <
// 2^24, so its float conversion is exact. As the K-quant panel, a row's super-block is unpacked
// once for all of a task's tokens. Moving the sign needs activation codes in [-127, 127] (-128
// has no negation in int8): Lumen's Q8_K rows are scaled by -127 / max, not ggml's -128.
void iq4_xs_panel(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int nt, int64_t cols, float* out) {
  constexpr size_t kWBytes = sizeof(tensor::BlockIQ4_XS);
  constexpr size_t kXBytes = sizeof(tensor::BlockQ8_K);
  constexpr int kSubBlocks = tensor::kSuperBlock / 32;
  const size_t next_tile = static_cast<size_t>(cols / tensor::kSuperBlock) * kWBytes * kTileRows * 2;
  __m256 acc[kTileRows][kMaxPanelTokens];
  for (int r = 0; r < kTileRows; ++r) {
    for (int t = 0; t < nt; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  const int64_t blocks = cols / tensor::kSuperBlock;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int r = 0; r < kTileRows; ++r) {
      const uint8_t* wb = w_rows[r] + static_cast<size_t>(b) * kWBytes;
      for (size_t line = 0; line < kWBytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(wb + next_tile + line), _MM_HINT_T0);
      }
      tensor::BlockIQ4_XS block;
      std::memcpy(&block, wb, kWBytes);
      __m256i levels[kSubBlocks], magnitudes[kSubBlocks], scales[kSubBlocks];
      for (int k = 0; k < kSubBlocks; ++k) {
        const int ls =
            (((block.scales_l[k / 2] >> (4 * (k % 2))) & 15) | (((block.scales_h >> (2 * k)) & 3) << 4)) - 32;
        levels[k] = iq4_levels(block.qs + 16 * k);
        magnitudes[k] = _mm256_sign_epi8(levels[k], levels[k]);
        scales[k] = _mm256_set1_epi16(static_cast<int16_t>(ls));
      }
      const float d = tensor::fp16_to_float(block.d);
      for (int t = 0; t < nt; ++t) {
        const uint8_t* xb = x_rows[t] + b * kXBytes;
        float xd;
        std::memcpy(&xd, xb, 4);
        const uint8_t* xqs = xb + offsetof(tensor::BlockQ8_K, qs);
        __m256i sum = _mm256_setzero_si256();
        for (int k = 0; k < kSubBlocks; ++k) {
          const __m256i act = _mm256_sign_epi8(load_256(xqs + 32 * k), levels[k]);
          sum = dot_i16(sum, _mm256_maddubs_epi16(magnitudes[k], act), scales[k]);
        }
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(d * xd), acc[r][t]);
      }
    }
  }
  for (int t = 0; t < nt; ++t) {
    for (int r = 0; r < kTileRows; ++r) out[t * kTileRows + r] = hsum(acc[r][t]);
  }
}

template <int NT>
struct IQ4_XSTile {
  static void run(const uint8_t* const* w, const uint8_t* const* x, int64_t cols, float* out) {
    iq4_xs_panel(w, x, NT, cols, out);
  }
};

// ---- float weights against f32 activations ----

struct F32Format {
  static constexpr size_t kSize = 4;
  static __m256 load8(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static float load1(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
};

struct F16Format {
  static constexpr size_t kSize = 2;
  static __m256 load8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float load1(const uint8_t* p) { return load_f16(p); }
};

struct BF16Format {
  static constexpr size_t kSize = 2;
  static __m256 load8(const uint8_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float load1(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return tensor::bf16_to_float(h);
  }
};

template <typename F, int NT>
void float_tile(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int64_t cols, float* out) {
  __m256 acc[kTileRows][NT];
  for (int r = 0; r < kTileRows; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  const float* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const float*>(x_rows[t]);
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    __m256 xv[NT];
    for (int t = 0; t < NT; ++t) xv[t] = _mm256_loadu_ps(x[t] + c);
    for (int r = 0; r < kTileRows; ++r) {
      const __m256 wv = F::load8(w_rows[r] + c * F::kSize);
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < kTileRows; ++r) {
      float sum = hsum(acc[r][t]);
      for (int64_t tail = c; tail < cols; ++tail) sum += F::load1(w_rows[r] + tail * F::kSize) * x[t][tail];
      out[t * kTileRows + r] = sum;
    }
  }
}

#if defined(__AVX512F__)
// f32 weights at the AVX-512 level: sixteen lanes per accumulator and _mm512_reduce_add_ps, the
// order llama.cpp's tinyBLAS sums an f32 matrix product in on AVX-512 machines (built by GCC) (its prompt path;
// a MoE router's logits, which decide which experts run, then agree with it bit for bit).
// _mm512_reduce_add_ps's pairing as GCC's header computes it (halves, quarters, then the four
// lanes as (0 + 2) + (1 + 3)), on the stored lanes: once per output, and GCC 12's 512-bit
// extracts warn of an undefined register.
inline float hsum_512(__m512 v) {
  alignas(64) float l[16];
  _mm512_store_ps(l, v);
  float s8[8], s4[4];
  for (int i = 0; i < 8; ++i) s8[i] = l[i + 8] + l[i];
  for (int i = 0; i < 4; ++i) s4[i] = s8[i + 4] + s8[i];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

template <int NT>
void f32_tile_512(const uint8_t* const* w_rows, const uint8_t* const* x_rows, int64_t cols, float* out) {
  __m512 acc[kTileRows][NT];
  for (int r = 0; r < kTileRows; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  const float* x[NT];
  for (int t = 0; t < NT; ++t) x[t] = reinterpret_cast<const float*>(x_rows[t]);
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16) {
    __m512 xv[NT];
    for (int t = 0; t < NT; ++t) xv[t] = _mm512_loadu_ps(x[t] + c);
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 wv = _mm512_loadu_ps(reinterpret_cast<const float*>(w_rows[r]) + c);
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < kTileRows; ++r) {
      float sum = hsum_512(acc[r][t]);
      for (int64_t tail = c; tail < cols; ++tail) sum += F32Format::load1(w_rows[r] + tail * 4) * x[t][tail];
      out[t * kTileRows + r] = sum;
    }
  }
}

template <int NT>
struct F32Tile512 {
  static void run(const uint8_t* const* w, const uint8_t* const* x, int64_t cols, float* out) {
    f32_tile_512<NT>(w, x, cols, out);
  }
};
#endif

// ---- the table ----

template <template <int> class Tile>
constexpr TypeKernels make_x86_kernels(DType act, QuantizeRowFn quantize, PanelFn panel = nullptr) {
  return TypeKernels{act, quantize, {&Tile<1>::run, &Tile<2>::run, &Tile<3>::run, &Tile<4>::run}, panel};
}

template <typename F>
struct LegacyTile {
  template <int NT>
  struct At {
    static void run(const uint8_t* const* w, const uint8_t* const* x, int64_t cols, float* out) {
      legacy_tile<F, NT>(w, x, cols, out);
    }
  };
};

template <KquantRegistersFn unpack, size_t kBlockBytes>
struct KquantTile {
  template <int NT>
  struct At {
    static void run(const uint8_t* const* w, const uint8_t* const* x, int64_t cols, float* out) {
      kquant_tile<unpack, kBlockBytes, NT>(w, x, cols, out);
    }
  };
};

template <typename Block, KquantRegistersFn unpack>
constexpr TypeKernels kquant_kernels() {
  return make_x86_kernels<KquantTile<unpack, sizeof(Block)>::template At>(DType::Q8_K, quantize_act_q8_k,
                                                                          kquant_panel<unpack, sizeof(Block)>);
}

template <typename F>
struct FloatTile {
  template <int NT>
  struct At {
    static void run(const uint8_t* const* w, const uint8_t* const* x, int64_t cols, float* out) {
      float_tile<F, NT>(w, x, cols, out);
    }
  };
};

const TypeKernels* x86_kernels_for(DType type) {
  static constexpr TypeKernels kQ4_0 = make_x86_kernels<LegacyTile<Q4_0Format>::At>(DType::Q8_0, quantize_act_q8_0);
  static constexpr TypeKernels kQ4_1 = make_x86_kernels<LegacyTile<Q4_1Format>::At>(DType::Q8_1, quantize_act_q8_1);
  static constexpr TypeKernels kQ5_0 = make_x86_kernels<LegacyTile<Q5_0Format>::At>(DType::Q8_0, quantize_act_q8_0);
  static constexpr TypeKernels kQ5_1 = make_x86_kernels<LegacyTile<Q5_1Format>::At>(DType::Q8_1, quantize_act_q8_1);
  static constexpr TypeKernels kQ8_0 = make_x86_kernels<LegacyTile<Q8_0Format>::At>(DType::Q8_0, quantize_act_q8_0);
  static constexpr TypeKernels kQ2_K = kquant_kernels<tensor::BlockQ2_K, staged_registers<decode_q2_k>>();
  static constexpr TypeKernels kQ3_K = kquant_kernels<tensor::BlockQ3_K, staged_registers<decode_q3_k>>();
  static constexpr TypeKernels kQ4_K = kquant_kernels<tensor::BlockQ4_K, q4_k_registers>();
  static constexpr TypeKernels kQ5_K = kquant_kernels<tensor::BlockQ5_K, staged_registers<decode_q5_k>>();
  static constexpr TypeKernels kQ6_K = kquant_kernels<tensor::BlockQ6_K, q6_k_registers>();
  static constexpr TypeKernels kIQ4_NL = make_x86_kernels<LegacyTile<IQ4_NLFormat>::At>(DType::Q8_0, quantize_act_q8_0);
  static constexpr TypeKernels kIQ4_XS = make_x86_kernels<IQ4_XSTile>(DType::Q8_K, quantize_act_q8_k, iq4_xs_panel);
  static constexpr TypeKernels kMXFP4 = make_x86_kernels<LegacyTile<MXFP4Format>::At>(DType::Q8_0, quantize_act_q8_0);
#if defined(__AVX512F__)
  static constexpr TypeKernels kF32 = make_x86_kernels<F32Tile512>(DType::F32, nullptr);
#else
  static constexpr TypeKernels kF32 = make_x86_kernels<FloatTile<F32Format>::At>(DType::F32, nullptr);
#endif
  static constexpr TypeKernels kF16 = make_x86_kernels<FloatTile<F16Format>::At>(DType::F32, nullptr);
  static constexpr TypeKernels kBF16 = make_x86_kernels<FloatTile<BF16Format>::At>(DType::F32, nullptr);
  switch (type) {
    case DType::Q4_0: return &kQ4_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q8_0: return &kQ8_0;
    case DType::Q2_K: return &kQ2_K;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    case DType::IQ4_NL: return &kIQ4_NL;
    case DType::IQ4_XS: return &kIQ4_XS;
    case DType::MXFP4: return &kMXFP4;
    case DType::F32: return &kF32;
    case DType::F16: return &kF16;
    case DType::BF16: return &kBF16;
    default: return nullptr;
  }
}

}  // namespace
}  // namespace lumen::backend::cpu::detail
