// The parts of a LayerNorm decoder (BlockFeatures::layer_norm: BLOOM) that differ from the
// RMS-norm blocks of model/transformer.cc: its norms (LayerNorm with bias: the backend's
// layer_norm), its plain GELU FFN with biases, and its fused QKV matrix read as three (an
// encoder's too).
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

}  // namespace

void Transformer::split_fused_qkv() {
  const auto q_width = static_cast<int64_t>(hp_.head_dim * hp_.head_count);
  const auto kv_width = static_cast<int64_t>(hp_.head_dim * hp_.head_count_kv);
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    LayerWeights& w = weights_.layers[layer];
    if (!w.wqkv) continue;
    // On the CPU backend each part is uploaded as a matrix of its own (it aliases the bytes, no
    // copy), so that its matmul finds the part's packed layout as it would a separate matrix's.
    const bool host = backend_.name() == "cpu";
    auto part = [&](int64_t first, int64_t n) {
      const TensorView view = rows_of(*w.wqkv, first, n, false);
      return host ? backend_.upload_weights(view.type, view.dims, view.data) : view;
    };
    w.wq = part(0, q_width);
    w.wk = part(q_width, kv_width);
    w.wv = part(q_width + kv_width, kv_width);
    if (w.bqkv) {
      w.bq = rows_of(*w.bqkv, 0, q_width, true);
      w.bk = rows_of(*w.bqkv, q_width, kv_width, true);
      w.bv = rows_of(*w.bqkv, q_width + kv_width, kv_width, true);
    }
  }
}

void Transformer::block_norm(const TensorView& x, const TensorView& weight, const std::optional<TensorView>& bias,
                             TensorView& out) {
  if (!arch_.features.layer_norm) {
    backend_.rms_norm(x, weight, static_cast<float>(hp_.norm_eps), out);
    return;
  }
  if (!bias) fail("the {} architecture's LayerNorm has no bias tensor", hp_.architecture);
  backend_.layer_norm(x, weight, *bias, static_cast<float>(hp_.norm_eps), out);
}

void Transformer::gelu_ffn(const LayerWeights& w, TensorView& h, TensorView& up) {
  observe(w.ffn_up, h);
  backend_.matmul(w.ffn_up, h, up);
  if (w.ffn_up_b) backend_.add_row(up, *w.ffn_up_b);
  backend_.gelu_tanh(up);
  observe(w.ffn_down, up);
  backend_.matmul(w.ffn_down, up, h);
  if (w.ffn_down_b) backend_.add_row(h, *w.ffn_down_b);
}

}  // namespace lumen::model
