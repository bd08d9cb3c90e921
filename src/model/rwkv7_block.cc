#include "model/rwkv7_block.h"

#include <algorithm>

#include "model/state_cache.h"
#include "util/error.h"

namespace lumen::model {

namespace {

using backend::first_rows;
using backend::Rwkv7Activation;
using backend::TensorView;

// llama.cpp's group norm epsilon (64e-5, which RWKV 7 uses for its heads of 64; llama.cpp keeps
// it for every head size).
constexpr double kGroupNormEps = 64e-5;

// A one-row parameter {embedding, 1, 1, k} seen as k rows (the six token-shift mixes).
TensorView as_rows(const TensorView& t) {
  TensorView rows = t;
  rows.dims = {t.dims[0], t.dims[1] * t.dims[2] * t.dims[3], 1, 1};
  return rows;
}

}  // namespace

// Not the backend's layer_norm, on purpose: that one keeps every step in double and rounds once;
// rwkv7_norm rounds as ggml's graph does (the scale to f32, x - mean to f32, then f32 products
// and the bias as separate ops). Measured with the lane-exact kernels (LUMEN_ISA=avx2) on the
// rwkv_rwkv7 golden: this rounding agrees with llama.cpp at top-1 1.0000, mean |diff| 0.000266;
// layer_norm's (for these norms and the group norm) drops to 0.9931 and 0.000450.

Rwkv7Block::Rwkv7Block(backend::Backend& backend, const HParams& hp) : backend_(backend), hp_(hp) {
  if (!has_rwkv(hp)) fail("an RWKV 7 block for a model without {}.wkv.head_size", hp.architecture);
  head_size_ = static_cast<int64_t>(hp.wkv_head_size);
  heads_ = static_cast<int64_t>(hp.embedding_length) / head_size_;
}

void Rwkv7Block::ensure_capacity(int64_t n) {
  if (n <= capacity_) return;
  capacity_ = n;
  buffers_.clear();
  auto matrix = [&](uint64_t cols, int64_t rows) {
    buffers_.push_back(backend_.allocate(cols * static_cast<size_t>(rows) * sizeof(float)));
    return backend::f32_matrix(static_cast<float*>(buffers_.back()->data()), static_cast<int64_t>(cols), rows);
  };
  const uint64_t e = hp_.embedding_length;
  norm_ = matrix(e, n);
  mixed_ = matrix(e, 6 * n);
  for (TensorView* m : {&r_, &w_, &k_, &v_, &a_, &kk_, &b_, &g_, &v_first_, &wkv_, &out_}) *m = matrix(e, n);
  lora_mid_ = matrix(std::max({hp_.rwkv_decay_lora, hp_.rwkv_iclr_lora, hp_.rwkv_value_lora, hp_.rwkv_gate_lora}), n);
  ffn_ = matrix(hp_.feed_forward_length, n);
}

void Rwkv7Block::begin_batch(const ForwardBatch& batch) { begin_state_batch(batch, "an RWKV model"); }

void Rwkv7Block::layer_norm(TensorView& x, const TensorView& weight, const TensorView& bias) {
  backend_.rwkv7_norm(x, weight, bias, hp_.norm_eps, x.dims[0], x);
}

void Rwkv7Block::lora(const TensorView& w1, const TensorView& w2, const TensorView& in, TensorView& out,
                      std::optional<Rwkv7Activation> f) {
  TensorView mid = first_rows(lora_mid_, in.dims[1]);
  mid.dims[0] = w1.dims[1];
  mid.row_bytes = static_cast<size_t>(mid.dims[0]) * sizeof(float);
  backend_.matmul(w1, in, mid);
  if (f) backend_.rwkv7_activation(mid, *f);
  backend_.matmul(w2, mid, out);
}

void Rwkv7Block::shift_rows(const ForwardBatch& batch, uint64_t layer, int mix) {
  shift_seqs_.resize(batch.sequences.size());
  for (size_t i = 0; i < shift_seqs_.size(); ++i) {
    shift_seqs_[i] = {batch.sequences[i].first_token, batch.sequences[i].n_tokens,
                      batch.states->rwkv_shift_row(batch.state_slots[i], layer, mix)};
  }
}

void Rwkv7Block::forward(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, TensorView& x) {
  ensure_capacity(x.dims[1]);
  time_mix(layer, w, batch, x);
  channel_mix(layer, w, batch, x);
}

void Rwkv7Block::time_mix(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, TensorView& x) {
  const int64_t n = x.dims[1];
  TensorView norm = first_rows(norm_, n);
  backend_.rwkv7_norm(x, w.attn_norm, *w.attn_norm_b, hp_.norm_eps, x.dims[0], norm);
  // Token shift: the six inputs (r, w, k, v, a, g), each row pulled toward the row before it by
  // its own mix; each sequence's shift row then keeps its last normed row.
  TensorView all_mixed = first_rows(mixed_, 6 * n);
  shift_rows(batch, layer, 0);
  backend_.rwkv7_token_shift(norm, shift_seqs_, as_rows(*w.rwkv_mixes), all_mixed);
  TensorView mixed[6];
  for (int m = 0; m < 6; ++m) {
    mixed[m] = first_rows(all_mixed, n);
    mixed[m].data = all_mixed.row<float>(m * n);
  }
  TensorView r = first_rows(r_, n), dw = first_rows(w_, n), k = first_rows(k_, n);
  TensorView a = first_rows(a_, n), kk = first_rows(kk_, n), b = first_rows(b_, n), g = first_rows(g_, n);
  TensorView v_first = first_rows(v_first_, n), wkv = first_rows(wkv_, n), out = first_rows(out_, n);
  // Layer 0's values are the ones later layers pull theirs toward: they stay in v_first.
  TensorView v = layer == 0 ? v_first : first_rows(v_, n);
  backend_.matmul(w.wq, mixed[0], r);
  backend_.matmul(w.wk, mixed[2], k);
  backend_.matmul(w.wv, mixed[3], v);
  lora(*w.rwkv_w1, *w.rwkv_w2, mixed[1], dw, Rwkv7Activation::Tanh);
  lora(*w.rwkv_a1, *w.rwkv_a2, mixed[4], a, std::nullopt);
  lora(*w.rwkv_g1, *w.rwkv_g2, mixed[5], g, Rwkv7Activation::Sigmoid);
  if (layer > 0) {  // the value residual: v pulled toward layer 0's
    lora(*w.rwkv_v1, *w.rwkv_v2, mixed[3], out, std::nullopt);
    backend_.rwkv7_value_residual(v, v_first, out, *w.rwkv_v0);
  }
  backend::Rwkv7KeyRows keys{dw, a, k, kk, b};
  backend_.rwkv7_keys(keys, {*w.rwkv_w0, *w.rwkv_a0, *w.rwkv_k_k, *w.rwkv_k_a}, head_size_);
  // The wkv7 update (Backend::rwkv_wkv7) from each sequence's state matrices.
  wkv_seqs_.resize(batch.sequences.size());
  for (size_t i = 0; i < wkv_seqs_.size(); ++i) {
    wkv_seqs_[i] = {batch.sequences[i].first_token, batch.sequences[i].n_tokens,
                    batch.states->rwkv_wkv_state(batch.state_slots[i], layer)};
  }
  const backend::Wkv7Rows rows{r, dw, k, v, kk, b};
  backend_.rwkv_wkv7(rows, head_size_, wkv_seqs_, wkv);
  // The group norm per head, the r.k bonus (v times sum of r * k * r_k, per head) and the gate.
  backend_.rwkv7_norm(wkv, *w.rwkv_ln_x, *w.rwkv_ln_x_b, kGroupNormEps, head_size_, wkv);
  backend_.rwkv7_bonus_gate(wkv, r, k, v, g, *w.rwkv_r_k, head_size_);
  backend_.matmul(w.wo, wkv, out);
  backend_.add(x, out, x);
}

void Rwkv7Block::channel_mix(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, TensorView& x) {
  const int64_t n = x.dims[1];
  TensorView norm = first_rows(norm_, n), mixed = first_rows(mixed_, n);
  backend_.rwkv7_norm(x, w.ffn_norm, *w.ffn_norm_b, hp_.norm_eps, x.dims[0], norm);
  shift_rows(batch, layer, 1);
  backend_.rwkv7_token_shift(norm, shift_seqs_, as_rows(*w.rwkv_ffn_mix), mixed);
  TensorView ffn = first_rows(ffn_, n), out = first_rows(out_, n);
  backend_.matmul(w.ffn_up, mixed, ffn);
  backend_.rwkv7_activation(ffn, Rwkv7Activation::ReluSquared);
  backend_.matmul(w.ffn_down, ffn, out);
  backend_.add(x, out, x);
}

}  // namespace lumen::model
