#pragma once
// Unpacks one K-quant super-block of any kind (Q2_K .. Q6_K) into a single uniform shape, so one
// dot-product kernel per instruction set serves all five formats:
//
//   w[e] = d * sc[e / 16] * codes[e] - dmin * mn[e / 16]        (e in [0, 256))
//
// with unsigned codes (at most 63, so u8 x s8 pair sums fit int16) and int16 sub-block scales.
// Formats with a signed grid fold their offset into mn: Q6_K's q - 32 is codes = q + 32 with
// mn = 32 * sc and dmin = d; Q3_K's likewise with 4. Against a Q8_K activation block a,
//
//   dot = d * a.d * sum_s sc[s] * (codes . a.qs)[s]  -  dmin * a.d * sum_s mn[s] * a.bsums[s].
//
// Included by the scalar and the SIMD translation units; everything sits in an anonymous
// namespace so each is compiled with its own unit's instruction set (no ODR sharing between a
// portable and an AVX-512 copy). The loops are plain so the compiler vectorises them per unit.
#include <cstdint>
#include <cstring>

#include "tensor/block_formats.h"
#include "tensor/fp16.h"

namespace lumen::backend::cpu::detail {
namespace {

using tensor::kSuperBlock;

struct DecodedSuper {
  alignas(64) uint8_t codes[kSuperBlock];
  int16_t sc[16];
  int16_t mn[16];
  float d;
  float dmin;
};

template <typename Block>
Block load_super(const uint8_t* row, int64_t index) {
  Block block;
  std::memcpy(&block, row + index * int64_t{sizeof(Block)}, sizeof(Block));
  return block;
}

// Q2_K and Q3_K store 2-bit codes as four planes per 32-byte half: element
// 128 * half + 32 * plane + l sits in bits 2 * plane of qs[32 * half + l].
inline void unpack_two_bit_planes(const uint8_t* qs, uint8_t* codes) {
  for (int half = 0; half < 2; ++half) {
    for (int plane = 0; plane < 4; ++plane) {
      for (int l = 0; l < 32; ++l) {
        codes[128 * half + 32 * plane + l] =
            static_cast<uint8_t>((qs[32 * half + l] >> (2 * plane)) & 3);
      }
    }
  }
}

inline void decode_q2_k(const uint8_t* row, int64_t index, DecodedSuper& out) {
  const auto block = load_super<tensor::BlockQ2_K>(row, index);
  unpack_two_bit_planes(block.qs, out.codes);
  for (int s = 0; s < 16; ++s) {
    out.sc[s] = static_cast<int16_t>(block.scales[s] & 15);
    out.mn[s] = static_cast<int16_t>(block.scales[s] >> 4);
  }
  out.d = tensor::fp16_to_float(block.d);
  out.dmin = tensor::fp16_to_float(block.dmin);
}

inline void decode_q3_k(const uint8_t* row, int64_t index, DecodedSuper& out) {
  const auto block = load_super<tensor::BlockQ3_K>(row, index);
  unpack_two_bit_planes(block.qs, out.codes);
  // hmask bit (4 * half + plane) of byte l is the high bit of that plane's element l; a clear
  // bit means the value is 4 lower, so codes = low2 + 4 * bit and the offset is 4.
  for (int half = 0; half < 2; ++half) {
    for (int plane = 0; plane < 4; ++plane) {
      const int shift = 4 * half + plane;
      for (int l = 0; l < 32; ++l) {
        out.codes[128 * half + 32 * plane + l] = static_cast<uint8_t>(
            out.codes[128 * half + 32 * plane + l] + 4 * ((block.hmask[l] >> shift) & 1));
      }
    }
  }
  // Sixteen 6-bit scales: the low 4 bits are nibbles of bytes 0..7, the high 2 bits pairs of
  // bytes 8..11.
  for (int s = 0; s < 16; ++s) {
    const int low = (s < 8) ? (block.scales[s] & 15) : (block.scales[s - 8] >> 4);
    const int high = (block.scales[8 + (s & 3)] >> (2 * (s >> 2))) & 3;
    const int scale = (low | (high << 4)) - 32;
    out.sc[s] = static_cast<int16_t>(scale);
    out.mn[s] = static_cast<int16_t>(4 * scale);
  }
  out.d = tensor::fp16_to_float(block.d);
  out.dmin = out.d;
}

// The eight (scale, min) 6-bit pairs of Q4_K and Q5_K, for sub-blocks of 32.
inline void scale_min_pairs(const uint8_t* packed, int16_t* sc16, int16_t* mn16) {
  for (int j = 0; j < 8; ++j) {
    int scale = 0, min = 0;
    if (j < 4) {
      scale = packed[j] & 63;
      min = packed[j + 4] & 63;
    } else {
      scale = (packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4);
      min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
    }
    sc16[2 * j] = sc16[2 * j + 1] = static_cast<int16_t>(scale);
    mn16[2 * j] = mn16[2 * j + 1] = static_cast<int16_t>(min);
  }
}

// Q4_K/Q5_K nibbles: 64-element group g holds sub-block 2g in the low nibbles of qs[32g..] and
// sub-block 2g + 1 in the high nibbles.
inline void unpack_nibble_groups(const uint8_t* qs, uint8_t* codes) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      codes[64 * g + l] = static_cast<uint8_t>(qs[32 * g + l] & 15);
      codes[64 * g + 32 + l] = static_cast<uint8_t>(qs[32 * g + l] >> 4);
    }
  }
}

inline void decode_q4_k(const uint8_t* row, int64_t index, DecodedSuper& out) {
  const auto block = load_super<tensor::BlockQ4_K>(row, index);
  unpack_nibble_groups(block.qs, out.codes);
  scale_min_pairs(block.scales, out.sc, out.mn);
  out.d = tensor::fp16_to_float(block.d);
  out.dmin = tensor::fp16_to_float(block.dmin);
}

inline void decode_q5_k(const uint8_t* row, int64_t index, DecodedSuper& out) {
  const auto block = load_super<tensor::BlockQ5_K>(row, index);
  unpack_nibble_groups(block.qs, out.codes);
  // Bit 4 of element e is bit e / 32 of qh[e % 32].
  for (int sub = 0; sub < 8; ++sub) {
    for (int l = 0; l < 32; ++l) {
      out.codes[32 * sub + l] =
          static_cast<uint8_t>(out.codes[32 * sub + l] | (((block.qh[l] >> sub) & 1) << 4));
    }
  }
  scale_min_pairs(block.scales, out.sc, out.mn);
  out.d = tensor::fp16_to_float(block.d);
  out.dmin = tensor::fp16_to_float(block.dmin);
}

inline void decode_q6_k(const uint8_t* row, int64_t index, DecodedSuper& out) {
  const auto block = load_super<tensor::BlockQ6_K>(row, index);
  // Per 128-element half: ql holds the low nibbles of four 32-element quarters (quarters 0 and
  // 1 in the low nibbles of ql[0..63], 2 and 3 in the high ones), qh their 2-bit tops.
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = block.ql + 64 * half;
    const uint8_t* qh = block.qh + 32 * half;
    uint8_t* codes = out.codes + 128 * half;
    for (int l = 0; l < 32; ++l) {
      codes[l] = static_cast<uint8_t>((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4));
      codes[l + 32] = static_cast<uint8_t>((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
      codes[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      codes[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
  for (int s = 0; s < 16; ++s) {
    out.sc[s] = block.scales[s];
    out.mn[s] = static_cast<int16_t>(32 * block.scales[s]);
  }
  out.d = tensor::fp16_to_float(block.d);
  out.dmin = out.d;
}

using DecodeSuperFn = void (*)(const uint8_t* row, int64_t index, DecodedSuper& out);

}  // namespace
}  // namespace lumen::backend::cpu::detail
