// The encoder forward pass (BlockFeatures::encoder: BERT, nomic-bert), a Transformer member kept
// apart from the decoder's. Every op goes through the backend: the LayerNorms and the erf GELU
// (BackendFeature::LayerNorm) and the bidirectional attention (BackendFeature::Encoder), which
// reads this pass's own K and V rows, never the KV cache: an encoder sees its whole input at
// once and keeps nothing. A fused QKV matrix was split into three views at load
// (Transformer::split_fused_matrices).
#include <cmath>
#include <vector>

#include "model/transformer.h"

namespace lumen::model {

namespace {

using backend::as_heads;
using backend::first_rows;
using backend::TensorView;

}  // namespace

void Transformer::encode(const ForwardBatch& batch, int64_t n) {
  const auto eps = static_cast<float>(hp_.norm_eps);
  TensorView x = first_rows(s_.x, n), h = first_rows(s_.h, n);
  TensorView q = first_rows(s_.q, n), k = first_rows(s_.k, n), v = first_rows(s_.v, n);
  TensorView attn = first_rows(s_.attn, n), up = first_rows(s_.up, n);
  // Token, position (BERT's learned ones; nomic-bert rotates q and k instead) and token-type
  // (all type 0) embeddings, then their LayerNorm.
  backend_.get_rows(weights_.token_embd, batch.tokens, x);
  if (weights_.position_embd) {
    backend_.get_rows(*weights_.position_embd, batch.positions, h);
    backend_.add(x, h, x);
  }
  const std::vector<int32_t> type_zero(static_cast<size_t>(n), 0);
  backend_.get_rows(*weights_.token_types, type_zero, h);
  backend_.add(x, h, x);
  backend_.layer_norm(x, *weights_.token_embd_norm, *weights_.token_embd_norm_b, eps, x);
  // One slice per sequence: an encoder has no sliding windows, so its cache layout is one group.
  const std::span<const backend::SequenceSlice> sequences = batch.sequences;
  backend::AttentionConfig config;
  config.n_heads = attention_.n_heads;
  config.n_kv_heads = attention_.n_kv_heads;
  config.head_dim = attention_.head_dim;
  config.scale = attention_.scale;
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    const backend::Backend::MatmulOutput qkv[] = {{&w.wq, &q}, {&w.wk, &k}, {&w.wv, &v}};
    backend_.matmul_same_input(x, qkv);
    if (w.bq) backend_.add_row(q, *w.bq);
    if (w.bk) backend_.add_row(k, *w.bk);
    if (w.bv) backend_.add_row(v, *w.bv);
    if (!weights_.position_embd) {
      TensorView q_heads = as_heads(q, n, config.head_dim), k_heads = as_heads(k, n, config.head_dim);
      backend_.rope(q_heads, batch.positions, rope_);
      backend_.rope(k_heads, batch.positions, rope_);
    }
    backend_.bidirectional_attention(q, k, v, sequences, config, attn);
    backend_.matmul(w.wo, attn, h);
    if (w.bo) backend_.add_row(h, *w.bo);
    backend_.add(x, h, x);
    backend_.layer_norm(x, w.attn_norm, *w.attn_norm_b, eps, x);
    if (w.ffn_gate.data != nullptr) {  // nomic-bert: silu(gate) x up, then down
      TensorView gate = first_rows(s_.gate, n);
      backend_.matmul_glu(w.ffn_gate, w.ffn_up, x, backend::Backend::Glu::Swiglu, gate, up);
      backend_.matmul(w.ffn_down, gate, h);
    } else {  // BERT: erf GELU of up, then down
      backend_.matmul(w.ffn_up, x, up);
      if (w.ffn_up_b) backend_.add_row(up, *w.ffn_up_b);
      backend_.gelu_erf(up);
      backend_.matmul(w.ffn_down, up, h);
    }
    if (w.ffn_down_b) backend_.add_row(h, *w.ffn_down_b);
    backend_.add(x, h, x);
    backend_.layer_norm(x, w.ffn_norm, *w.ffn_norm_b, eps, x);
  }
}

}  // namespace lumen::model
