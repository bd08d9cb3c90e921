#pragma once
// Row-wise ops that no backend has as an op yet, run on host rows over the CPU backend's
// thread pool: the LayerNorm (with bias) and the GELUs of the encoders (BERT) and of the
// LayerNorm decoders (BLOOM). A model that needs them runs on the CPU backend only.
#include <algorithm>
#include <cstdint>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace lumen::model {

// Rows per task of the row-wise loops: enough work to outweigh a task's hand-out.
constexpr int64_t kRowsPerTask = 16;

// fn(row) for every row of x, over the pool's workers.
template <typename Fn>
void for_each_row(ThreadPool& pool, const backend::TensorView& x, Fn fn) {
  const int64_t rows = x.dims[1];
  pool.parallel_for((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task, unsigned) {
    for (int64_t r = task * kRowsPerTask; r < std::min(rows, (task + 1) * kRowsPerTask); ++r) fn(r);
  });
}

// Each row of x (x.dims[0] values) to (x - mean) / sqrt(var + eps) * w + b into the same row of
// out (which may be x), in double: the rows of a post-norm model grow with depth, and a float
// sum of squares of them loses the small ones. (RWKV 7 has its own, rounded step by step as
// ggml's graph is: model/rwkv7_block.cc says why the two stay apart.)
void layer_norm(ThreadPool& pool, const backend::TensorView& x, const backend::TensorView& w,
                const backend::TensorView& b, double eps, backend::TensorView& out);

// BERT's "gelu": the exact x * Phi(x), with erf (Hugging Face's, not the tanh approximation).
void gelu_erf(ThreadPool& pool, backend::TensorView& x);

// The tanh approximation as ggml computes it (its f16 table, backend/common/gelu_table.h):
// BLOOM's FFN, so that logits match llama.cpp's.
void gelu_tanh(ThreadPool& pool, backend::TensorView& x);

}  // namespace lumen::model
