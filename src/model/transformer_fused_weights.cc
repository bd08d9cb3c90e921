// Fused matrices read as their parts: q, k and v in one matrix (nomic-bert, BLOOM, Phi-3) and
// the FFN's gate and up in one (Phi-3). Each part is a view of the fused matrix's rows, so the
// forward pass runs the same matmuls as for a file with separate matrices.
#include "model/transformer.h"
#include "util/error.h"

namespace lumen::model {

namespace {

using backend::TensorView;

// Rows [first, first + n) of a matrix (or elements of a bias) as a tensor of their own.
TensorView rows_of(const TensorView& m, int64_t first, int64_t n, bool bias) {
  TensorView part = m;
  if (bias) {
    part.dims[0] = n;
    part.row_bytes = static_cast<size_t>(n) * sizeof(float);
    part.data = static_cast<float*>(m.data) + first;
  } else {
    part.dims[1] = n;
    part.data = static_cast<uint8_t*>(m.data) + static_cast<size_t>(first) * m.row_bytes;
  }
  return part;
}

// A matrix's rows as a matrix. On the CPU backend the part is uploaded as a matrix of its own
// (it aliases the bytes, no copy), so that its matmul finds the part's packed layout as it
// would a separate matrix's.
TensorView matrix_part(backend::Backend& backend, const TensorView& fused, int64_t first, int64_t n) {
  const TensorView view = rows_of(fused, first, n, false);
  return backend.name() == "cpu" ? backend.upload_weights(view.type, view.dims, view.data) : view;
}

}  // namespace

void Transformer::split_fused_matrices() {
  const auto q_width = static_cast<int64_t>(hp_.head_dim * hp_.head_count);
  const auto kv_width = static_cast<int64_t>(hp_.head_dim * hp_.head_count_kv);
  const auto ff = static_cast<int64_t>(hp_.feed_forward_length);
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    LayerWeights& w = weights_.layers[layer];
    if (w.wqkv) {
      w.wq = matrix_part(backend_, *w.wqkv, 0, q_width);
      w.wk = matrix_part(backend_, *w.wqkv, q_width, kv_width);
      w.wv = matrix_part(backend_, *w.wqkv, q_width + kv_width, kv_width);
    }
    if (w.bqkv) {
      w.bq = rows_of(*w.bqkv, 0, q_width, true);
      w.bk = rows_of(*w.bqkv, q_width, kv_width, true);
      w.bv = rows_of(*w.bqkv, q_width + kv_width, kv_width, true);
    }
    if (w.ffn_gate_up) {  // gate rows first: llama.cpp's SwiGLU of the two halves
      w.ffn_gate = matrix_part(backend_, *w.ffn_gate_up, 0, ff);
      w.ffn_up = matrix_part(backend_, *w.ffn_gate_up, ff, ff);
    }
  }
}

}  // namespace lumen::model
