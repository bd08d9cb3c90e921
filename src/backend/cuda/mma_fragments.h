#pragma once
// The register layout of the tensor cores' warp-wide f16 product mma.m16n8k16 (PTX ISA,
// "Matrix Fragments for mma.m16n8k16 with floating point type"): D (16 x 8, f32) = A (16 x 16,
// f16, row-major) x B (16 x 8, f16, "col": each column's k values) + C. Each of the warp's 32
// lanes holds 8 values of A in four 32-bit registers (two f16 each, the lower index in the low
// half), 4 of B in two and 4 of C / D in four floats. With g = lane / 4 and t = lane % 4:
//   A value i: row g (+8 when bit 1 of i is set), column 2t + (i & 1) (+8 when i >= 4);
//   B value i: row 2t + (i & 1) (+8 when i >= 2), column g;
//   C value i: row g (+8 when i >= 2), column 2t + (i & 1).
// The two values of a register are always adjacent along k (A's columns, B's rows), so a
// register is one aligned 32-bit load from a row-major A or from B stored column by column.
//
// Written once for the device and the host (hd_math.h), so tests/unit/cuda_host emulates a warp's
// products with these coordinates and checks the prefill kernel's per-lane steps on a CPU.
#include <cstdint>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda::mma {

inline constexpr int kM = 16, kN = 8, kK = 16;

struct Coord {
  int row, col;
};

LUMEN_HD Coord a_coord(int lane, int i) {
  return {(lane >> 2) + ((i >> 1) & 1) * 8, 2 * (lane & 3) + (i & 1) + (i >> 2) * 8};
}

LUMEN_HD Coord b_coord(int lane, int i) { return {2 * (lane & 3) + (i & 1) + (i >> 1) * 8, lane >> 2}; }

LUMEN_HD Coord c_coord(int lane, int i) { return {(lane >> 2) + (i >> 1) * 8, 2 * (lane & 3) + (i & 1)}; }

// Two f16 values (bits) in one register, `low` at the lower k.
LUMEN_HD uint32_t pack(uint16_t low, uint16_t high) {
  return static_cast<uint32_t>(low) | (static_cast<uint32_t>(high) << 16);
}

// An aligned pair of f16 values from shared (or host) memory.
LUMEN_HD uint32_t load_pair(const uint16_t* p) { return hd::load_u32(reinterpret_cast<const uint8_t*>(p)); }

// The lane's A registers of the 16 x 16 block at `base`, rows `stride` values apart (row-major).
LUMEN_HD void load_a(const uint16_t* base, int stride, int lane, uint32_t a[4]) {
  LUMEN_UNROLL
  for (int r = 0; r < 4; ++r) {
    const Coord c = a_coord(lane, 2 * r);
    a[r] = load_pair(base + c.row * stride + c.col);
  }
}

// The lane's B registers of the 16 x 8 block whose column n (k values 0..15) starts at
// base + n * stride: B stored column by column, as K's rows are for scores (k = head dims,
// n = keys) and V's transposed rows for the output (k = keys, n = head dims).
LUMEN_HD void load_b(const uint16_t* base, int stride, int lane, uint32_t b[2]) {
  LUMEN_UNROLL
  for (int r = 0; r < 2; ++r) {
    const Coord c = b_coord(lane, 2 * r);
    b[r] = load_pair(base + c.col * stride + c.row);
  }
}

}  // namespace lumen::backend::cuda::mma
