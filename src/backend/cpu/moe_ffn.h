#pragma once
// A mixture-of-experts FFN on the CPU (Backend::moe_ffn): for each expert that rows are routed
// to, its rows of x are gathered into one contiguous batch; every expert's gate and up (with the
// GLU) then run as one parallel job over all experts, and every down as another
// (matmul_grouped), so each expert's weights stream from memory once per step whatever the
// number of rows; the weighted results are put in each row's slot and summed per row in slot
// order.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/matmul.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {

// One expert's matrices (described for the matmul kernels) and the rows routed to it.
struct ExpertMatrices {
  WeightMatrix gate, up, down;
  std::span<const int32_t> rows;
  std::span<const int32_t> slots;
  std::span<const float> weights;
  // gpt-oss: biases of gate x and up x (gate.rows values) and of the down product (down.rows);
  // null: none. All three or none.
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* down_bias = nullptr;
};

// Grows to the largest batch seen; after that a step allocates nothing.
struct MoeScratch {
  std::vector<float> x;         // every expert's gathered rows, expert after expert
  std::vector<float> gate, up;  // their gate / up products
  std::vector<float> y;         // their down products
  std::vector<float> slot_out;  // weighted results, one row per (row, slot)
  std::vector<uint8_t> filled;  // which (row, slot) places hold one
  std::vector<MatmulScratch> quantized;  // each expert's quantized activations
  std::vector<MatmulTarget> targets;
  std::vector<MatmulGroup> groups;
  std::vector<int64_t> row_offset, ff_offset;
};

// out[t] = sum over the filled slots s of row t, in slot order, of weight * down(glu(gate x_t,
// up x_t)); each weighted product is rounded to f32 before the sums. With an expert's biases:
// weight * (down(glu(gate x_t + b_gate, up x_t + b_up)) + b_down), as llama.cpp adds them. x: n_tokens rows of `cols`
// values, x_stride apart; out likewise (out_stride). Throws lumen::Error for a row out of range,
// a slot out of range or filled twice, or matrices that do not fit together.
void moe_ffn(const float* x, int64_t x_stride, int64_t n_tokens, int64_t cols, std::span<const ExpertMatrices> experts,
             int64_t n_slots, GluRowFn glu, float* out, int64_t out_stride, ThreadPool& pool, MoeScratch& scratch);

}  // namespace lumen::backend::cpu
