// The encoder forward pass (BlockFeatures::encoder: BERT), a Transformer member kept apart
// from the decoder's. The matrices go through the backend's matmul like a decoder's; the
// LayerNorms, the erf GELU and the bidirectional attention run here on host rows, which is why
// an encoder needs the CPU backend (the constructor checks), whose thread pool they share out
// (attention by sequence and head, the rest by rows). Attention reads this pass's own K and V
// rows, never the KV cache: an encoder sees its whole input at once and keeps nothing.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/host_row_ops.h"
#include "model/transformer.h"
#include "util/error.h"

namespace lumen::model {

namespace {

using backend::first_rows;
using backend::TensorView;

// A {row, n} matrix seen as {head_dim, heads, n} for rope.
TensorView as_heads(const TensorView& m, int64_t n, int64_t head_dim) {
  TensorView view = m;
  view.dims = {head_dim, m.dims[0] / head_dim, n, 1};
  view.row_bytes = static_cast<size_t>(head_dim) * sizeof(float);
  return view;
}

// Every token of a sequence attends to every token of it (no causal mask): softmax(q.k * scale)
// over the sequence's rows, per head, times its values.
// One task per sequence and head.
void bidirectional_attention(ThreadPool& pool, const TensorView& q, const TensorView& k, const TensorView& v,
                             std::span<const backend::SequenceSlice> sequences, int64_t heads, int64_t kv_heads,
                             int64_t head_dim, float scale, TensorView& out) {
  const int64_t group = heads / kv_heads;
  pool.parallel_for(static_cast<int64_t>(sequences.size()) * heads, [&](int64_t task, unsigned) {
    const backend::SequenceSlice& seq = sequences[static_cast<size_t>(task / heads)];
    const int64_t h = task % heads;
    std::vector<double> scores(static_cast<size_t>(seq.n_tokens));
    {
      const int64_t kv_h = h / group;
      for (int64_t i = 0; i < seq.n_tokens; ++i) {
        const float* qi = q.row<float>(seq.first_token + i) + h * head_dim;
        double most = -INFINITY;
        for (int64_t j = 0; j < seq.n_tokens; ++j) {
          const float* kj = k.row<float>(seq.first_token + j) + kv_h * head_dim;
          double dot = 0.0;
          for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(qi[d]) * kj[d];
          scores[static_cast<size_t>(j)] = dot * scale;
          most = std::max(most, scores[static_cast<size_t>(j)]);
        }
        double sum = 0.0;
        for (double& s : scores) sum += (s = std::exp(s - most));
        float* o = out.row<float>(seq.first_token + i) + h * head_dim;
        for (int64_t d = 0; d < head_dim; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < seq.n_tokens; ++j) {
            acc += scores[static_cast<size_t>(j)] * v.row<float>(seq.first_token + j)[kv_h * head_dim + d];
          }
          o[d] = static_cast<float>(acc / sum);
        }
      }
    }
  });
}

}  // namespace

void Transformer::encode(const ForwardBatch& batch, int64_t n) {
  auto* cpu = dynamic_cast<backend::CpuBackend*>(&backend_);
  if (cpu == nullptr) fail("the {} architecture (an encoder) runs on the CPU backend only", hp_.architecture);
  ThreadPool& pool = cpu->pool();
  const double eps = hp_.norm_eps;
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
  layer_norm(pool, x, *weights_.token_embd_norm, *weights_.token_embd_norm_b, eps, x);
  // One slice per sequence: an encoder has no sliding windows, so its cache layout is one group.
  const std::span<const backend::SequenceSlice> sequences = batch.sequences;
  const int64_t head_dim = attention_.head_dim;
  std::vector<float> fused;  // nomic-bert's q, k and v rows, as its one matrix gives them
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    const LayerWeights& w = weights_.layers[layer];
    if (w.wqkv) {
      const int64_t qw = q.dims[0], kw = k.dims[0];
      fused.resize(static_cast<size_t>(n * (qw + 2 * kw)));
      TensorView all = backend::f32_matrix(fused.data(), qw + 2 * kw, n);
      backend_.matmul(*w.wqkv, x, all);
      for_each_row(pool, all, [&](int64_t r) {
        const float* row = all.row<float>(r);
        std::copy_n(row, qw, q.row<float>(r));
        std::copy_n(row + qw, kw, k.row<float>(r));
        std::copy_n(row + qw + kw, kw, v.row<float>(r));
      });
    } else {
      const backend::Backend::MatmulOutput qkv[] = {{&w.wq, &q}, {&w.wk, &k}, {&w.wv, &v}};
      backend_.matmul_same_input(x, qkv);
    }
    if (w.bq) backend_.add_row(q, *w.bq);
    if (w.bk) backend_.add_row(k, *w.bk);
    if (w.bv) backend_.add_row(v, *w.bv);
    if (!weights_.position_embd) {
      TensorView q_heads = as_heads(q, n, head_dim), k_heads = as_heads(k, n, head_dim);
      backend_.rope(q_heads, batch.positions, rope_);
      backend_.rope(k_heads, batch.positions, rope_);
    }
    bidirectional_attention(pool, q, k, v, sequences, attention_.n_heads, attention_.n_kv_heads, attention_.head_dim,
                            attention_.scale, attn);
    backend_.matmul(w.wo, attn, h);
    if (w.bo) backend_.add_row(h, *w.bo);
    backend_.add(x, h, x);
    layer_norm(pool, x, w.attn_norm, *w.attn_norm_b, eps, x);
    if (w.ffn_gate.data != nullptr) {  // nomic-bert: silu(gate) x up, then down
      TensorView gate = first_rows(s_.gate, n);
      backend_.matmul_glu(w.ffn_gate, w.ffn_up, x, backend::Backend::Glu::Swiglu, gate, up);
      backend_.matmul(w.ffn_down, gate, h);
    } else {  // BERT: erf GELU of up, then down
      backend_.matmul(w.ffn_up, x, up);
      if (w.ffn_up_b) backend_.add_row(up, *w.ffn_up_b);
      gelu_erf(pool, up);
      backend_.matmul(w.ffn_down, up, h);
    }
    if (w.ffn_down_b) backend_.add_row(h, *w.ffn_down_b);
    backend_.add(x, h, x);
    layer_norm(pool, x, w.ffn_norm, *w.ffn_norm_b, eps, x);
  }
}

}  // namespace lumen::model
