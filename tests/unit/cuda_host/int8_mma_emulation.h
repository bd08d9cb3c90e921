#pragma once
// The tensor cores' signed-byte products for one warp, rebuilt from the PTX ISA's byte
// coordinates (spelled here, apart from the kernels' word-level loaders, so a loader that strays
// from the documented layout fails): the int8 GEMMs' emulations (int8_gemm_test.cc,
// int8_gemm_kquant_test.cc). Lane = 4 g + t; C value i is row g (+8 for i >= 2), column 2 t +
// i % 2 in both shapes.
#include <array>
#include <cstdint>

namespace lumen::backend::cuda::emulation {

using IntFragments4 = std::array<std::array<uint32_t, 4>, 32>;
using IntFragments2 = std::array<std::array<uint32_t, 2>, 32>;
using IntAccumulators = std::array<std::array<int, 4>, 32>;

inline int8_t byte_of(uint32_t word, int i) { return static_cast<int8_t>(static_cast<uint8_t>(word >> (8 * i))); }

inline void store_products(const int (&am)[16][32], const int (&bm)[32][8], int depth, IntAccumulators& c) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + i % 2;
      int sum = 0;
      for (int k = 0; k < depth; ++k) sum += am[row][k] * bm[k][col];
      c[static_cast<size_t>(lane)][static_cast<size_t>(i)] = sum;
    }
  }
}

// mma.m16n8k32.row.col.s32.s8.s8.s32 from zero: A byte i (register i / 4, byte i % 4) is row g
// (+8 for i in 4..7 and 12..15), column 4 t + i % 4 (+16 for i >= 8); B byte i is row 4 t + i % 4
// (+16 for i >= 4), column g.
inline void warp_mma_s8(const IntFragments4& a, const IntFragments2& b, IntAccumulators& c) {
  int am[16][32], bm[32][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 16; ++i) {
      const int row = g + ((i >= 4 && i < 8) || i >= 12 ? 8 : 0);
      const int col = 4 * t + i % 4 + (i >= 8 ? 16 : 0);
      am[row][col] = byte_of(a[static_cast<size_t>(lane)][static_cast<size_t>(i / 4)], i % 4);
    }
    for (int i = 0; i < 8; ++i) {
      bm[4 * t + i % 4 + (i >= 4 ? 16 : 0)][g] =
          byte_of(b[static_cast<size_t>(lane)][static_cast<size_t>(i / 4)], i % 4);
    }
  }
  store_products(am, bm, 32, c);
}

// mma.m16n8k16.row.col.s32.s8.s8.s32 from zero, on A registers {a0, a1} and B register b0 of
// each lane (given as a m16n8k32's registers and which half: a[2 h], a[2 h + 1], b[h]): A byte
// i (register i / 4) is row g (+8 for i >= 4), column 4 t + i % 4; B byte i is row 4 t + i,
// column g.
inline void warp_mma_s8_k16(const IntFragments4& a, const IntFragments2& b, int half, IntAccumulators& c) {
  int am[16][32] = {}, bm[32][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    const auto l = static_cast<size_t>(lane);
    for (int i = 0; i < 8; ++i) {
      am[g + (i >= 4 ? 8 : 0)][4 * t + i % 4] = byte_of(a[l][static_cast<size_t>(2 * half + i / 4)], i % 4);
    }
    for (int i = 0; i < 4; ++i) bm[4 * t + i][g] = byte_of(b[l][static_cast<size_t>(half)], i);
  }
  store_products(am, bm, 16, c);
}

}  // namespace lumen::backend::cuda::emulation
