#pragma once
// Quantized matrix multiplication on the CPU: y = x W^T for f32 activations x and a weight
// matrix W in any supported storage type. Activations are first quantized to the 8-bit block
// type that pairs with the weight type (as ggml does), then integer dot products run on the
// best instruction set the CPU has (AVX-512 VNNI, AVX2, or portable scalar code).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "tensor/dtype.h"
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
};

// For t in [0, n_tokens), r in [0, w.rows): y[t * y_stride + r] = sum_c W[r, c] x[t * x_stride + c].
void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch);

// The same on instruction-set level `isa` instead of selected_isa(); tests and benchmarks use it
// to compare levels. Throws lumen::Error for a level the CPU lacks.
void matmul(const WeightMatrix& w, const float* x, int64_t x_stride, int64_t n_tokens, float* y,
            int64_t y_stride, ThreadPool& pool, MatmulScratch& scratch, Isa isa);

// Whether matmul accepts weights of `type` (F32, F16, BF16, Q4_0..Q8_0, Q2_K..Q6_K).
bool matmul_supports(tensor::DType type);

}  // namespace lumen::backend::cpu
