#pragma once
// RWKV 7's block (Mixer::Rwkv7), the whole of it between two residual-stream states, as
// llama.cpp computes it (its rwkv7 graph; the RWKV-7 "Goose" paper for the meaning):
//   time mix:    LayerNorm; token shift (each row mixed with the row before it, per channel,
//                6 ways: r, w, k, v, a, g); r, k, v projections; the decay w =
//                exp(-e^-0.5 sigmoid(w0 + W2 tanh(W1 xw))), the in-context learning rate
//                a = sigmoid(a0 + A2 A1 xa), the gate g = G2 sigmoid(G1 xg), and (layers > 0)
//                v mixed toward layer 0's v by sigmoid(v0 + V2 V1 xv); kk = l2norm(k * k_k) per
//                head, k scaled by 1 + (a - 1) k_a; the wkv7 state update
//                (backend/cpu/rwkv_wkv7.h) with a = -kk, b = kk * a; a group norm per head
//                (ln_x); plus v times sum(r * k * r_k) per head; times g; the output projection;
//                the residual add.
//   channel mix: LayerNorm; token shift (one mix); relu(K x)^2; V; the residual add.
// Each sequence runs from its own state (model/state_cache.h): per layer, the two token-shift
// rows (the last normed input of each mix) and a head_size x head_size wkv matrix per head.
// Every step is a backend op (BackendFeature::Rwkv7: rwkv_wkv7 and the element-wise rwkv7_*
// ops, rounded as llama.cpp's graph rounds them; the matrices through matmul), so the block runs
// on any backend that declares the feature.
#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "model/forward_batch.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace lumen::model {

class Rwkv7Block {
 public:
  Rwkv7Block(backend::Backend& backend, const HParams& hp);

  // Zeroes the slots of the batch's sequences that start at position 0, and checks the batch
  // carries a slot per sequence and no drafts: once per forward pass, before the first layer.
  void begin_batch(const ForwardBatch& batch);
  // x (f32 {embedding, n}, the residual stream) goes through layer `layer`'s block.
  void forward(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, backend::TensorView& x);
  // The LayerNorm of the embeddings and of the final rows, both with a bias.
  void layer_norm(backend::TensorView& x, const backend::TensorView& weight, const backend::TensorView& bias);

 private:
  void ensure_capacity(int64_t n);
  void time_mix(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, backend::TensorView& x);
  void channel_mix(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, backend::TensorView& x);
  // A LoRA's two matmuls: out = W2 f(W1 in), f (none: identity) applied to the rank-wide middle.
  void lora(const backend::TensorView& w1, const backend::TensorView& w2, const backend::TensorView& in,
            backend::TensorView& out, std::optional<backend::Rwkv7Activation> f);
  // Each sequence's token-shift row `mix` (0: the time mix's, 1: the channel mix's) of `layer`.
  void shift_rows(const ForwardBatch& batch, uint64_t layer, int mix);

  backend::Backend& backend_;
  HParams hp_;
  int64_t heads_ = 0, head_size_ = 0;
  int64_t capacity_ = 0;
  std::vector<std::unique_ptr<backend::Buffer>> buffers_;
  // {embedding, n} rows: the normed input, the 6 mixed inputs (r, w, k, v, a, g: mix m in rows
  // [m n, (m + 1) n) of mixed_), and r, w, k, v, a, kk, b, g, layer 0's v, the wkv output and the
  // projected output.
  backend::TensorView norm_, mixed_, r_, w_, k_, v_, a_, kk_, b_, g_, v_first_, wkv_, out_;
  backend::TensorView lora_mid_;         // {largest rank, n}
  backend::TensorView ffn_;              // {feed_forward, n}
  std::vector<backend::TokenShiftSequence> shift_seqs_;  // per sequence: its rows, a shift row
  std::vector<backend::Wkv7Sequence> wkv_seqs_;          // per sequence: its rows, this layer's wkv matrices
};

}  // namespace lumen::model
