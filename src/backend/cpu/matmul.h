#pragma once
// Quantized matrix multiplication on the CPU: y = x W^T for f32 activations x and a weight
// matrix W in any supported storage type. Activations are first quantized to the 8-bit block
// type that pairs with the weight type (as ggml does), then integer dot products run on the
// best instruction set the CPU has (AVX-512 VNNI, AVX2, or portable scalar code).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "tensor/dtype.h"
#include "util/range_split.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {

class PackedWeights;

// A 2-D weight: `rows` output features, each a row of `cols` input features in `type`.
struct WeightMatrix {
  tensor::DType type;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;
  size_t row_bytes = 0;
  // Optionally the same matrix rearranged by PackedWeights (matmul_packed.h); used instead of
  // `data` at the levels that have packed kernels for the type. Must hold the same values.
  const PackedWeights* packed = nullptr;
};

// Reusable memory for quantized activations: grows to the largest batch seen, then the
// per-token path allocates nothing.
struct MatmulScratch {
  std::vector<uint8_t> quantized_x;
  std::vector<uint8_t> packed_x;  // activations in the packed kernels' form
  RangeSplit split;               // decode-shaped calls' work split (matmul.cc)
};

// For t in [0, n_tokens), r in [0, w.rows): y[t * y_stride + r] = sum_c W[r, c] x[t * x_stride + c].
void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch);

// The same on instruction-set level `isa` instead of selected_isa(); tests and benchmarks use it
// to compare levels. Throws lumen::Error for a level the CPU lacks.
void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch, Isa isa);

// One weight of a matmul_same_input call and where its product goes.
struct MatmulTarget {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
  int64_t y_stride = 0;
};
constexpr size_t kMaxMatmulTargets = 4;

// matmul for up to kMaxMatmulTargets weights applied to the same x (a layer's Q, K and V, or its
// gate and up): x is quantized once per activation format, and all tiles of all weights share
// one parallel_for. For a single decoded token the layer's small matrices each take tens of
// microseconds, so one pool round-trip and one quantization instead of three is a measurable
// part of the step. Results are bit-identical to separate matmul calls.
void matmul_same_input(std::span<const MatmulTarget> targets, const float* x, int64_t x_stride,
                       int64_t n_tokens, ThreadPool& pool, MatmulScratch& scratch,
                       Isa isa = selected_isa());

// A gated MLP's first half in one parallel job: gate.y = glu(W_gate x, W_up x), row by row
// (glu is swiglu_row or geglu_row; up.y receives W_up x on the way). Each task computes the same
// rows of both products and applies glu to them at once, which saves the separate activation
// pass over the pool. Bit-identical to matmul_same_input followed by the activation op.
using GluRowFn = void (*)(const float* gate, const float* up, int64_t n, float* out);
void matmul_glu(const MatmulTarget& gate, const MatmulTarget& up, GluRowFn glu, const float* x,
                int64_t x_stride, int64_t n_tokens, ThreadPool& pool, MatmulScratch& scratch,
                Isa isa = selected_isa());

// Several independent matmul (or matmul_glu) calls, each with its own activations, in one
// parallel job: a mixture-of-experts layer's experts, each over the rows routed to it. A group
// has one target (a plain matmul) or, when glu is given, two (gate and up, as matmul_glu). Each
// group quantizes its x into its own scratch (scratch grows to the number of groups); the
// results are bit-identical to one call per group, without a pool round trip per expert and
// with the threads balanced across all of them.
struct MatmulGroup {
  const MatmulTarget* targets = nullptr;  // 1, or 2 (gate, up) with glu
  const float* x = nullptr;
  int64_t x_stride = 0;
  int64_t n_tokens = 0;
};
void matmul_grouped(std::span<const MatmulGroup> groups, GluRowFn glu, ThreadPool& pool,
                    std::vector<MatmulScratch>& scratch, Isa isa = selected_isa());

// Whether matmul accepts weights of `type` (F32, F16, BF16, Q4_0..Q8_0, Q2_K..Q6_K).
bool matmul_supports(tensor::DType type);

}  // namespace lumen::backend::cpu
