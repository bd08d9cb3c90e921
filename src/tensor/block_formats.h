#pragma once
// The packed on-disk blocks of the quantized formats, field for field as ggml lays them out.
// Multi-byte fields are little-endian (as GGUF is), which is why a big-endian host is refused
// below. f16 fields are held as raw bits (uint16_t) and go through tensor/fp16.h.
//
// Blocks inside a tensor row are not aligned (a Q4_0 block is 18 bytes), so kernels copy each
// block into one of these structs with memcpy instead of casting the row pointer.
#include <bit>
#include <cmath>
#include <cstdint>

namespace lumen::tensor {

static_assert(std::endian::native == std::endian::little,
              "block layouts are read in place as little-endian");

inline constexpr int kLegacyBlock = 32;  // elements per block of Q4_0 .. Q8_1
inline constexpr int kSuperBlock = 256;  // elements per K-quant super-block (ggml's QK_K)

// ---- legacy formats: one scale (and maybe a min) per 32 elements ----
// Element j < 16 sits in the low nibble of qs[j], element j + 16 in its high nibble.

struct BlockQ4_0 {  // x = d * (q - 8), q in [0, 15]
  uint16_t d;
  uint8_t qs[kLegacyBlock / 2];
};

struct BlockQ4_1 {  // x = d * q + m, q in [0, 15]
  uint16_t d;
  uint16_t m;
  uint8_t qs[kLegacyBlock / 2];
};

struct BlockQ5_0 {  // x = d * (q - 16), q in [0, 31]; bit 4 of element j is bit j of qh
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlock / 2];
};

struct BlockQ5_1 {  // x = d * q + m, q in [0, 31]; high bits as Q5_0
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlock / 2];
};

struct BlockQ8_0 {  // x = d * q
  uint16_t d;
  int8_t qs[kLegacyBlock];
};

struct BlockQ8_1 {  // x = d * q; s = d * sum(q) lets dot products fold in another block's min
  uint16_t d;
  uint16_t s;
  int8_t qs[kLegacyBlock];
};

// ---- K-quants: a 256-element super-block with an f16 scale over small integer sub-scales ----

struct BlockQ2_K {  // 16 sub-blocks of 16: x = d*(sc & 15) * q - dmin*(sc >> 4), q in [0, 3]
  uint8_t scales[kSuperBlock / 16];
  uint8_t qs[kSuperBlock / 4];  // 2-bit quants, four planes per 32-byte half
  uint16_t d;
  uint16_t dmin;
};

struct BlockQ3_K {  // 16 sub-blocks of 16: x = d * (sc - 32) * q, q in [-4, 3]
  uint8_t hmask[kSuperBlock / 8];  // set bit: q's high bit is 1 (i.e. no -4 offset)
  uint8_t qs[kSuperBlock / 4];     // low 2 bits, laid out as Q2_K's
  uint8_t scales[12];              // sixteen 6-bit scales, 4 low bits + 2 high bits each
  uint16_t d;
};

struct BlockQ4_K {  // 8 sub-blocks of 32: x = d*sc * q - dmin*m, q in [0, 15], sc/m 6-bit
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];  // eight (sc, m) pairs packed in 6 bits each
  uint8_t qs[kSuperBlock / 2];
};

struct BlockQ5_K {  // as Q4_K with q in [0, 31]; bit 4 of element e is bit e/32 of qh[e%32]
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};

struct BlockQ6_K {  // 16 sub-blocks of 16: x = d * sc * q, q in [-32, 31], sc int8
  uint8_t ql[kSuperBlock / 2];  // low 4 bits
  uint8_t qh[kSuperBlock / 4];  // high 2 bits
  int8_t scales[kSuperBlock / 16];
  uint16_t d;
};

struct BlockQ8_K {  // x = d * q with an f32 scale; only ever an intermediate for dot products
  float d;
  int8_t qs[kSuperBlock];
  int16_t bsums[kSuperBlock / 16];  // sum of each 16 quants
};

// ---- non-linear 4-bit formats (IQ4_NL, IQ4_XS): a code picks one of 16 fixed int8 levels ----
// The levels are denser near zero, where trained weights are. IQ4_NL has legacy blocks of 32
// with Q4_0's nibble layout; IQ4_XS has super-blocks of 256 made of 8 sub-blocks of 32, each with
// a 6-bit scale (ls - 32) under the super-block's f16 d, and each sub-block's 16 bytes of codes in
// Q4_0's layout again.
inline constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

struct BlockIQ4_NL {  // x = d * kIq4Levels[q], q in [0, 15]
  uint16_t d;
  uint8_t qs[kLegacyBlock / 2];
};

struct BlockIQ4_XS {  // x = d * (ls - 32) * kIq4Levels[q]; ls: 4 low bits in scales_l, 2 in scales_h
  uint16_t d;
  uint16_t scales_h;                   // bits 2 s, 2 s + 1: the high bits of sub-block s's ls
  uint8_t scales_l[kSuperBlock / 64];  // low nibble: sub-block 2 k, high nibble: 2 k + 1
  uint8_t qs[kSuperBlock / 2];
};

// ---- MXFP4 (OCP microscaling FP4, gpt-oss's experts; llama-quantize's MXFP4_MOE) ----
// Blocks of 32 E2M1 values under one E8M0 exponent. ggml stores each E2M1 value doubled, as one
// of 16 int8 levels, and the exponent halved to match: x = 2^(e - 128) * kMxfp4Levels[q], with
// Q4_0's nibble layout (low nibbles: elements 0-15, high: 16-31). Every e is a finite power of
// two, 2^-128 (a subnormal) to 2^127: ggml gives e = 255 no NaN meaning and neither does Lumen.
inline constexpr int8_t kMxfp4Levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

struct BlockMXFP4 {  // x = mxfp4_scale(e) * kMxfp4Levels[q]
  uint8_t e;
  uint8_t qs[kLegacyBlock / 2];
};

// 2^(e - 128), exactly, from its bits: the biased exponent e - 1 for e >= 2, and for e = 0 and 1
// the subnormals 2^-128 and 2^-127 (mantissa bits 21 and 22). The matmul kernels take one per
// block of 32 values, where std::ldexp's call cost more than the block's integer dot product
// (gpt-oss-20b's experts decoded at 2 GB/s with it).
constexpr float mxfp4_scale(uint8_t e) {
  return std::bit_cast<float>(e >= 2 ? static_cast<uint32_t>(e - 1) << 23 : uint32_t{0x00200000} << e);
}

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

}  // namespace lumen::tensor
