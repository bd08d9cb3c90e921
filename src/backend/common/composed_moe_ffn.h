#pragma once
// Backend::moe_ffn composed from a backend's own public ops, for a backend without a fused
// mixture-of-experts kernel (CUDA): each step is an op the conformance table already checks on
// that backend, so the composition is as correct there as they are, and a CPU test of it (on the
// CPU backend, against the CPU's native moe_ffn) checks the composition itself.
//
//   1. get_rows: every expert's rows of x, gathered expert after expert (one call);
//   2. per expert: matmul_glu (gate and up with the GLU), then matmul (down);
//   3. scale: each routed row's down output times its router weight (one row per call, skipped
//      for a weight of 1), so each weighted product is rounded to f32 as the native op does;
//   4. get_rows: the weighted outputs moved to their (slot, row) places, slot 0 straight into
//      out, an all-zero row for a place no expert fills;
//   5. add: slots 1.. added to out in slot order (the native op's order of sums).
//
// gpt-oss's experts (biases, the clamped SwiGLU) take the backend's BiasedGlu in step 2: gate and
// up apart (matmul_same_input), then gate = glu(gate + gate bias, up + up bias), down, and
// add_row of the down bias before the router's weight, the native op's order of operations.
//
// Cost: launches grow with the routed (row, expert) pairs (step 3), and the router's choices
// arrive as host arrays (ExpertWork's rows, slots and weights), which get_rows uploads per
// call on a device: the step-boundary rule (no host transfer inside a step) is not met until the
// router runs on the device. Scratch grows to the largest batch seen; after that a step
// allocates nothing.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace lumen::backend::common {

class ComposedMoeFfn {
 public:
  // gate = glu(gate + gate_bias, up + up_bias) over rows in the backend's memory; either bias may
  // be null (none). A backend without it refuses gpt-oss's experts.
  using BiasedGlu = std::function<void(TensorView& gate, const TensorView& up, const TensorView* gate_bias,
                                       const TensorView* up_bias, Glu glu)>;
  explicit ComposedMoeFfn(BiasedGlu biased_glu = {}) : biased_glu_(std::move(biased_glu)) {}

  // out = moe_ffn(x, experts, n_slots, glu) on `backend` (Backend::moe_ffn's contract). Throws
  // lumen::Error for a row or slot out of range, a place filled twice, or matrices that do not
  // fit, before anything is written.
  void run(Backend& backend, const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
           TensorView& out);

 private:
  void ensure_capacity(Backend& backend, int64_t cols, int64_t pairs, int64_t ff_values, int64_t slot_rows);

  BiasedGlu biased_glu_;
  int64_t cols_ = 0, pairs_ = -1, ff_values_ = -1, slot_rows_ = -1;  // capacities (-1: none yet)
  std::unique_ptr<Buffer> gathered_, gate_, up_, down_, slots_;
  // Host arrays, reused call to call.
  std::vector<int32_t> rows_;           // every expert's rows, expert after expert
  std::vector<int32_t> pair_of_place_;  // [slot * n + row]: the pair filling it, or the zero row
};

}  // namespace lumen::backend::common
