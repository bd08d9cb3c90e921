// mma.sync on the simulated device (cuda_sim.h): a warp's fragments meet (warp_meet), and the
// lane that completes the meeting computes every lane's accumulators from the PTX ISA's fragment
// layouts, in double (f16) or exactly (s8).
#include <algorithm>
#include <array>
#include <cstdint>

#include "block_state.h"
#include "tensor/fp16.h"

namespace cuda_sim {

using namespace detail;

namespace {

// Each lane's fragments and accumulators meet; the last lane to arrive computes every lane's C
// values from all of them, with the product A x B given by `product(fragments, row, col, acc)`.
template <typename Acc, typename Product>
void warp_product(Meeting meeting, Acc c[4], const uint32_t* regs, size_t n_regs, Product product) {
  Thread& t = self();
  WarpState& w = my_warp();
  std::copy_n(regs, n_regs, w.fragments[t.lane].begin());
  w.accumulators[t.lane] = c;
  if (!warp_meet(kFullMask, meeting)) return;
  for (int lane = 0; lane < 32; ++lane) {
    Acc* acc = static_cast<Acc*>(w.accumulators[static_cast<size_t>(lane)]);
    const int g = lane / 4, q = lane % 4;
    for (int i = 0; i < 4; ++i) acc[i] = product(w.fragments, g + (i >= 2 ? 8 : 0), 2 * q + i % 2, acc[i]);
  }
}

using Fragments = std::array<std::array<uint32_t, 6>, 32>;

float f16_at(const Fragments& f, int lane, int reg, int half) {
  return lumen::tensor::fp16_to_float(
      static_cast<uint16_t>(f[static_cast<size_t>(lane)][static_cast<size_t>(reg)] >> (16 * half)));
}
int s8_at(const Fragments& f, int lane, int reg, int byte) {
  return static_cast<int8_t>(
      static_cast<uint8_t>(f[static_cast<size_t>(lane)][static_cast<size_t>(reg)] >> (8 * byte)));
}

}  // namespace

// PTX ISA, mma.m16n8k16 .f16: A (row-major 16 x 16) register r of lane 4 g + q holds row g (+8
// for r = 1, 3), columns 2 q, 2 q + 1 (+8 for r = 2, 3); B (16 x 8, "col") register r holds rows
// 2 q, 2 q + 1 (+8 for r = 1) of column g. Registers 0..3 are A, 4..5 B.
void mma_f16(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  const uint32_t regs[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  warp_product(Meeting::MmaF16, c, regs, 6, [](const Fragments& f, int row, int col, float acc) {
    double sum = acc;
    for (int k = 0; k < 16; ++k) {
      const int a_lane = 4 * (row % 8) + (k % 8) / 2, a_reg = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
      const int b_lane = 4 * col + (k % 8) / 2, b_reg = 4 + (k >= 8 ? 1 : 0);
      sum += static_cast<double>(f16_at(f, a_lane, a_reg, k % 2)) * f16_at(f, b_lane, b_reg, k % 2);
    }
    return static_cast<float>(sum);
  });
}

// PTX ISA, mma.m16n8k32 .s8: A register r of lane 4 g + q holds row g (+8 for r = 1, 3), columns
// 4 q .. 4 q + 3 (+16 for r = 2, 3); B register r holds rows 4 q .. 4 q + 3 (+16 for r = 1) of
// column g.
void mma_s8(int c[4], const uint32_t a[4], const uint32_t b[2]) {
  const uint32_t regs[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  warp_product(Meeting::MmaS8, c, regs, 6, [](const Fragments& f, int row, int col, int acc) {
    for (int k = 0; k < 32; ++k) {
      const int a_lane = 4 * (row % 8) + (k % 16) / 4, a_reg = (row >= 8 ? 1 : 0) + (k >= 16 ? 2 : 0);
      const int b_lane = 4 * col + (k % 16) / 4, b_reg = 4 + (k >= 16 ? 1 : 0);
      acc += s8_at(f, a_lane, a_reg, k % 4) * s8_at(f, b_lane, b_reg, k % 4);
    }
    return acc;
  });
}

// PTX ISA, mma.m16n8k16 .s8: A register r holds row g (+8 for r = 1), columns 4 q .. 4 q + 3; B's
// one register rows 4 q .. 4 q + 3 of column g.
void mma_s8_k16(int c[4], uint32_t a0, uint32_t a1, uint32_t b) {
  const uint32_t regs[3] = {a0, a1, b};
  warp_product(Meeting::MmaS8K16, c, regs, 3, [](const Fragments& f, int row, int col, int acc) {
    for (int k = 0; k < 16; ++k) {
      acc += s8_at(f, 4 * (row % 8) + k / 4, row >= 8 ? 1 : 0, k % 4) * s8_at(f, 4 * col + k / 4, 2, k % 4);
    }
    return acc;
  });
}

}  // namespace cuda_sim
