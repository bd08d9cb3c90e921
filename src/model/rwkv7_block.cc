#include "model/rwkv7_block.h"

#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "model/state_cache.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace lumen::model {

namespace {

using backend::first_rows;
using backend::TensorView;

constexpr int64_t kRowsPerTask = 8;
// llama.cpp's constants: the decay's scale (-e^-0.5, RWKV 7's), the group norm's epsilon (64e-5,
// which RWKV 7 uses for its heads of 64; llama.cpp keeps it for every head size) and the l2
// norm's floor.
constexpr float kDecayScale = -0.606531f;
constexpr double kGroupNormEps = 64e-5;
constexpr float kL2Floor = 1e-12f;

const float* floats(const TensorView& v) { return static_cast<const float*>(v.data); }
const float* floats(const std::optional<TensorView>& v) { return static_cast<const float*>(v->data); }

ThreadPool& cpu_pool(backend::Backend& backend) {
  auto* cpu = dynamic_cast<backend::CpuBackend*>(&backend);
  if (cpu == nullptr) fail("RWKV 7 runs on the CPU backend only for now; use --device cpu");
  return cpu->pool();
}

// fn(row) for rows [0, n), over the pool's workers.
template <typename Fn>
void for_rows(ThreadPool& pool, int64_t n, Fn fn) {
  pool.parallel_for((n + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task, unsigned) {
    for (int64_t r = task * kRowsPerTask; r < std::min(n, (task + 1) * kRowsPerTask); ++r) fn(r);
  });
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

// (x - mean) / sqrt(var + eps) * weight + bias over `width` values, in double as ggml_norm sums.
// Not the backend's layer_norm, on purpose: that one keeps every step in double and rounds
// once; this one rounds as ggml's graph does (the scale to f32, x - mean to f32, then f32
// products and the bias as separate ops). Measured with the lane-exact kernels (LUMEN_ISA=avx2)
// on the rwkv_rwkv7 golden: this rounding agrees with llama.cpp at top-1 1.0000, mean |diff|
// 0.000266; layer_norm's (for these norms and the group norm) drops to 0.9931 and 0.000450.
// The other way round, BLOOM's and the encoders' norms would change rounding (not tried).
void normalize(float* x, int64_t width, double eps, const float* weight, const float* bias) {
  double mean = 0.0;
  for (int64_t c = 0; c < width; ++c) mean += x[c];
  mean /= static_cast<double>(width);
  double var = 0.0;
  for (int64_t c = 0; c < width; ++c) var += (x[c] - mean) * (x[c] - mean);
  const auto inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(width) + eps));
  for (int64_t c = 0; c < width; ++c) {
    x[c] = static_cast<float>(x[c] - mean) * inv * weight[c] + bias[c];
  }
}

// The row before each row of the batch: the previous row of its sequence, or, for a sequence's
// first row, the token-shift row its state kept (`offset` floats into the layer's state).
// Into `prev`, reused from layer to layer: a step allocates nothing once its shape was seen.
void previous_rows(const ForwardBatch& batch, uint64_t layer, size_t offset, const TensorView& rows,
                   std::vector<const float*>& prev) {
  prev.assign(static_cast<size_t>(rows.dims[1]), nullptr);
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const backend::SequenceSlice& slice = batch.sequences[i];
    const float* shift = batch.states->layer_state(batch.state_slots[i], layer).data() + offset;
    for (int64_t t = 0; t < slice.n_tokens; ++t) {
      prev[static_cast<size_t>(slice.first_token + t)] = t == 0 ? shift : rows.row<float>(slice.first_token + t - 1);
    }
  }
}

// Each sequence's last row becomes its token-shift row, once the layer has read the old one.
void store_last_rows(const ForwardBatch& batch, uint64_t layer, size_t offset, const TensorView& rows) {
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const backend::SequenceSlice& slice = batch.sequences[i];
    if (slice.n_tokens == 0) continue;
    float* shift = batch.states->layer_state(batch.state_slots[i], layer).data() + offset;
    std::copy_n(rows.row<float>(slice.first_token + slice.n_tokens - 1), rows.dims[0], shift);
  }
}

}  // namespace

Rwkv7Block::Rwkv7Block(backend::Backend& backend, const HParams& hp)
    : backend_(backend), pool_(cpu_pool(backend)), hp_(hp) {
  if (!has_rwkv(hp)) fail("an RWKV 7 block for a model without {}.wkv.head_size", hp.architecture);
  head_size_ = static_cast<int64_t>(hp.wkv_head_size);
  heads_ = static_cast<int64_t>(hp.embedding_length) / head_size_;
}

void Rwkv7Block::ensure_capacity(int64_t n) {
  if (n <= capacity_) return;
  capacity_ = n;
  buffers_.clear();
  auto matrix = [&](uint64_t cols) {
    buffers_.push_back(backend_.allocate(cols * static_cast<size_t>(n) * sizeof(float)));
    return backend::f32_matrix(static_cast<float*>(buffers_.back()->data()), static_cast<int64_t>(cols), n);
  };
  const uint64_t e = hp_.embedding_length;
  norm_ = matrix(e);
  for (TensorView& m : mixed_) m = matrix(e);
  for (TensorView* m : {&r_, &w_, &k_, &v_, &a_, &kk_, &b_, &g_, &v_first_, &wkv_, &out_}) *m = matrix(e);
  lora_mid_ = matrix(std::max({hp_.rwkv_decay_lora, hp_.rwkv_iclr_lora, hp_.rwkv_value_lora, hp_.rwkv_gate_lora}));
  ffn_ = matrix(hp_.feed_forward_length);
}

void Rwkv7Block::begin_batch(const ForwardBatch& batch) { begin_state_batch(batch, "an RWKV model"); }

void Rwkv7Block::layer_norm(TensorView& x, const TensorView& weight, const TensorView& bias) {
  const float *wt = floats(weight), *b = floats(bias);
  for_rows(pool_, x.dims[1], [&](int64_t r) { normalize(x.row<float>(r), x.dims[0], hp_.norm_eps, wt, b); });
}

template <typename Fn>
void Rwkv7Block::lora(const TensorView& w1, const TensorView& w2, const TensorView& in, TensorView& out, Fn f) {
  TensorView mid = first_rows(lora_mid_, in.dims[1]);
  mid.dims[0] = w1.dims[1];
  mid.row_bytes = static_cast<size_t>(mid.dims[0]) * sizeof(float);
  backend_.matmul(w1, in, mid);
  for_rows(pool_, mid.dims[1], [&](int64_t r) {
    float* row = mid.row<float>(r);
    for (int64_t c = 0; c < mid.dims[0]; ++c) row[c] = f(row[c]);
  });
  backend_.matmul(w2, mid, out);
}

void Rwkv7Block::forward(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, TensorView& x) {
  ensure_capacity(x.dims[1]);
  time_mix(layer, w, batch, x);
  channel_mix(layer, w, batch, x);
}

void Rwkv7Block::time_mix(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, TensorView& x) {
  const int64_t n = x.dims[1], e = x.dims[0];
  TensorView norm = first_rows(norm_, n);
  for_rows(pool_, n, [&](int64_t t) { std::copy_n(x.row<float>(t), e, norm.row<float>(t)); });
  layer_norm(norm, w.attn_norm, *w.attn_norm_b);
  // Token shift: the six inputs, each row pulled toward the row before it by its own mix.
  TensorView mixed[6];
  for (int m = 0; m < 6; ++m) mixed[m] = first_rows(mixed_[m], n);
  {
    previous_rows(batch, layer, 0, norm, prev_rows_);
    const std::vector<const float*>& prev = prev_rows_;
    const float* mixes = floats(w.rwkv_mixes);  // {embedding, 1, 1, 6}: r, w, k, v, a, g
    for_rows(pool_, n, [&](int64_t t) {
      const float *cur = norm.row<float>(t), *before = prev[static_cast<size_t>(t)];
      for (int m = 0; m < 6; ++m) {
        float* out = mixed[m].row<float>(t);
        const float* mix = mixes + static_cast<size_t>(m) * static_cast<size_t>(e);
        for (int64_t c = 0; c < e; ++c) out[c] = cur[c] + (before[c] - cur[c]) * mix[c];
      }
    });
  }
  store_last_rows(batch, layer, 0, norm);
  TensorView r = first_rows(r_, n), dw = first_rows(w_, n), k = first_rows(k_, n), v = first_rows(v_, n);
  TensorView a = first_rows(a_, n), kk = first_rows(kk_, n), b = first_rows(b_, n), g = first_rows(g_, n);
  TensorView v_first = first_rows(v_first_, n), wkv = first_rows(wkv_, n), out = first_rows(out_, n);
  backend_.matmul(w.wq, mixed[0], r);
  backend_.matmul(w.wk, mixed[2], k);
  backend_.matmul(w.wv, mixed[3], v);
  lora(*w.rwkv_w1, *w.rwkv_w2, mixed[1], dw, [](float u) { return std::tanh(u); });
  lora(*w.rwkv_a1, *w.rwkv_a2, mixed[4], a, [](float u) { return u; });
  lora(*w.rwkv_g1, *w.rwkv_g2, mixed[5], g, sigmoid);
  if (layer == 0) {
    for_rows(pool_, n, [&](int64_t t) { std::copy_n(v.row<float>(t), e, v_first.row<float>(t)); });
  } else {  // the value residual: v pulled toward layer 0's
    lora(*w.rwkv_v1, *w.rwkv_v2, mixed[3], out, [](float u) { return u; });
    const float* v0 = floats(w.rwkv_v0);
    for_rows(pool_, n, [&](int64_t t) {
      float *vr = v.row<float>(t), *mix = out.row<float>(t);
      const float* first = v_first.row<float>(t);
      for (int64_t c = 0; c < e; ++c) vr[c] += (first[c] - vr[c]) * sigmoid(mix[c] + v0[c]);
    });
  }
  const float *w0 = floats(w.rwkv_w0), *a0 = floats(w.rwkv_a0), *k_k = floats(w.rwkv_k_k);
  const float* k_a = floats(w.rwkv_k_a);
  for_rows(pool_, n, [&](int64_t t) {
    float *wr = dw.row<float>(t), *ar = a.row<float>(t), *kr = k.row<float>(t);
    float *kkr = kk.row<float>(t), *br = b.row<float>(t);
    for (int64_t c = 0; c < e; ++c) {
      wr[c] = std::exp(kDecayScale * sigmoid(wr[c] + w0[c]));
      ar[c] = sigmoid(ar[c] + a0[c]);
      kkr[c] = kr[c] * k_k[c];
    }
    for (int64_t h = 0; h < heads_; ++h) {  // kk: unit length per head
      float* head = kkr + h * head_size_;
      float sum = 0.0f;
      for (int64_t c = 0; c < head_size_; ++c) sum += head[c] * head[c];
      const float scale = 1.0f / std::max(std::sqrt(sum), kL2Floor);
      for (int64_t c = 0; c < head_size_; ++c) head[c] *= scale;
    }
    for (int64_t c = 0; c < e; ++c) {
      const float ka = kr[c] * k_a[c];
      kr[c] += ar[c] * ka - ka;
      br[c] = kkr[c] * ar[c];  // the wkv's b; its a is -kk
      kkr[c] = -kkr[c];
    }
  });
  // The wkv7 update (Backend::rwkv_wkv7): each sequence's state matrices follow its two
  // token-shift rows in the layer's state.
  wkv_seqs_.resize(batch.sequences.size());
  for (size_t i = 0; i < wkv_seqs_.size(); ++i) {
    float* state = batch.states->layer_state(batch.state_slots[i], layer).data() + 2 * e;
    wkv_seqs_[i] = {batch.sequences[i].first_token, batch.sequences[i].n_tokens,
                    backend::f32_matrix(state, head_size_, head_size_ * heads_)};
  }
  const backend::Wkv7Rows rows{r, dw, k, v, kk, b};
  backend_.rwkv_wkv7(rows, head_size_, wkv_seqs_, wkv);
  // The group norm per head, the r.k bonus (v times sum of r * k * r_k, per head) and the gate.
  const float *ln_w = floats(w.rwkv_ln_x), *ln_b = floats(w.rwkv_ln_x_b), *r_k = floats(w.rwkv_r_k);
  for_rows(pool_, n, [&](int64_t t) {
    float* o = wkv.row<float>(t);
    const float *rr = r.row<float>(t), *kr = k.row<float>(t), *vr = v.row<float>(t), *gr = g.row<float>(t);
    for (int64_t h = 0; h < heads_; ++h) {
      const int64_t at = h * head_size_;
      normalize(o + at, head_size_, kGroupNormEps, ln_w + at, ln_b + at);
      float bonus = 0.0f;
      for (int64_t c = at; c < at + head_size_; ++c) bonus += rr[c] * kr[c] * r_k[c];
      for (int64_t c = at; c < at + head_size_; ++c) o[c] = (o[c] + vr[c] * bonus) * gr[c];
    }
  });
  backend_.matmul(w.wo, wkv, out);
  backend_.add(x, out, x);
}

void Rwkv7Block::channel_mix(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, TensorView& x) {
  const int64_t n = x.dims[1], e = x.dims[0];
  TensorView norm = first_rows(norm_, n), mixed = first_rows(mixed_[0], n);
  for_rows(pool_, n, [&](int64_t t) { std::copy_n(x.row<float>(t), e, norm.row<float>(t)); });
  layer_norm(norm, w.ffn_norm, *w.ffn_norm_b);
  {
    previous_rows(batch, layer, static_cast<size_t>(e), norm, prev_rows_);
    const std::vector<const float*>& prev = prev_rows_;
    const float* mix = floats(w.rwkv_ffn_mix);
    for_rows(pool_, n, [&](int64_t t) {
      const float *cur = norm.row<float>(t), *before = prev[static_cast<size_t>(t)];
      float* out = mixed.row<float>(t);
      for (int64_t c = 0; c < e; ++c) out[c] = cur[c] + (before[c] - cur[c]) * mix[c];
    });
  }
  store_last_rows(batch, layer, static_cast<size_t>(e), norm);
  TensorView ffn = first_rows(ffn_, n), out = first_rows(out_, n);
  backend_.matmul(w.ffn_up, mixed, ffn);
  for_rows(pool_, n, [&](int64_t t) {
    float* row = ffn.row<float>(t);
    for (int64_t c = 0; c < ffn.dims[0]; ++c) {
      const float u = std::max(row[c], 0.0f);
      row[c] = u * u;
    }
  });
  backend_.matmul(w.ffn_down, ffn, out);
  backend_.add(x, out, x);
}

}  // namespace lumen::model
