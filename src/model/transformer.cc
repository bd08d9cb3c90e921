#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "backend/step_scope.h"
#include "dist/collectives.h"
#include "model/backend_needs.h"
#include "model/embedding_spans.h"
#include "model/expert_partition.h"
#include "model/expert_weights.h"
#include "model/rope_config.h"
#include "util/error.h"

namespace lumen::model {

using backend::first_rows;
using backend::TensorView;

void Transformer::ensure_capacity(int64_t n_tokens, int64_t n_logit_rows) {
  if (n_tokens <= capacity_tokens_ && n_logit_rows <= capacity_logit_rows_) return;
  capacity_tokens_ = std::max(n_tokens, capacity_tokens_);
  capacity_logit_rows_ = std::max(n_logit_rows, capacity_logit_rows_);
  buffers_.clear();
  auto matrix = [&](int64_t cols, int64_t rows) {
    buffers_.push_back(backend_.allocate(static_cast<size_t>(cols * rows) * sizeof(float)));
    return backend::f32_matrix(static_cast<float*>(buffers_.back()->data()), cols, rows);
  };
  const int64_t n = capacity_tokens_;
  const int64_t embd = static_cast<int64_t>(hp_.embedding_length);
  // Latent attention keeps its own buffers (model/latent_attention.h).
  const bool grouped = latent_ == nullptr;
  const int64_t q_dim = grouped ? static_cast<int64_t>(hp_.head_dim * hp_.head_count) : 1;
  const int64_t kv_dim = grouped ? static_cast<int64_t>(hp_.head_dim * hp_.head_count_kv) : 1;
  // At least one column: a state-space model has no FFN (a zero-byte buffer is no buffer).
  const int64_t ff = std::max<int64_t>(1, static_cast<int64_t>(hp_.feed_forward_length));
  s_.x = matrix(embd, n);
  s_.h = matrix(embd, n);
  s_.q = matrix(q_dim, n);
  s_.k = matrix(kv_dim, n);
  s_.v = matrix(kv_dim, n);
  s_.attn = matrix(q_dim, n);
  s_.gate = matrix(ff, n);
  s_.up = matrix(ff, n);
  s_.logit_h = matrix(embd, capacity_logit_rows_);
  if (moe_) moe_->reserve(n);
}

bool Transformer::mlp_block(size_t layer, int64_t n, const TensorView* next_attn_norm) {
  const LayerWeights& w = weights_.layers[layer];
  TensorView x = first_rows(s_.x, n), h = first_rows(s_.h, n);
  TensorView gate = first_rows(s_.gate, n), up = first_rows(s_.up, n);
  // The attention block's output (in h) joins the residual, and the sum is normed into h: one
  // pass where the backend fuses the two, the same numbers either way.
  const auto eps = static_cast<float>(hp_.norm_eps);
  if (residual_scale_ != 1.0f) backend_.scale(h, residual_scale_);
  if (arch_.features.layer_norm) {
    backend_.add(x, h, x);
    block_norm(x, w.ffn_norm, w.ffn_norm_b, h);
  } else if (backend_.has_op(backend::OpKind::AddRmsNorm)) {
    backend_.add_rms_norm(x, h, w.ffn_norm, eps, x, h);
  } else {
    backend_.add(x, h, x);
    backend_.rms_norm(x, w.ffn_norm, eps, h);
  }
  if (moe_ && w.ffn_gate_inp) {  // DeepSeek's leading layers are dense
    TensorView out = moe_->forward(layer, w, h);
    if (w.ffn_post_norm) backend_.rms_norm(out, *w.ffn_post_norm, static_cast<float>(hp_.norm_eps), out);
    return residual_add(out, n, next_attn_norm);
  }
  if (arch_.features.activation == Activation::Gelu) {
    gelu_ffn(w, h, up);
    return residual_add(h, n, next_attn_norm);
  }
  observe(w.ffn_gate, h);
  observe(w.ffn_up, h);
  backend_.matmul_glu(
      w.ffn_gate, w.ffn_up, h,
      arch_.features.activation == Activation::GeGlu ? backend::Backend::Glu::Geglu : backend::Backend::Glu::Swiglu,
      gate, up);
  observe(w.ffn_down, gate);  // the GLU's output
  backend_.matmul(w.ffn_down, gate, h);
  reduce_over_shard(h);
  if (w.ffn_post_norm) backend_.rms_norm(h, *w.ffn_post_norm, static_cast<float>(hp_.norm_eps), h);
  if (residual_scale_ != 1.0f) backend_.scale(h, residual_scale_);
  return residual_add(h, n, next_attn_norm);
}

bool Transformer::residual_add(const TensorView& branch, int64_t n, const TensorView* next_norm) {
  TensorView x = first_rows(s_.x, n);
  if (next_norm == nullptr) {
    backend_.add(x, branch, x);
    return false;
  }
  // The sum stays in x; its norm overwrites h, which may be the branch itself (add_rms_norm lets
  // out alias b).
  TensorView h = first_rows(s_.h, n);
  backend_.add_rms_norm(x, branch, *next_norm, static_cast<float>(hp_.norm_eps), x, h);
  return true;
}

const TensorView* Transformer::fusable_next_attn_norm(size_t layer) const {
  const size_t next = layer + 1;
  // Layers whose first op is not attention_inputs' RMS norm of x (state-space and RWKV blocks,
  // latent attention, LayerNorm blocks), the last layer (the final norm reads only the logit
  // rows), and a backend without the fused op keep the plain add.
  if (next >= layers_.end || rwkv7_ || latent_ || arch_.features.layer_norm || arch_.features.mixer == Mixer::Mamba2 ||
      is_ssm_layer(hp_, next) || !backend_.has_op(backend::OpKind::AddRmsNorm)) {
    return nullptr;
  }
  return &weights_.layers[next].attn_norm;
}

void Transformer::mamba2_mix(size_t layer, const ForwardBatch& batch, int64_t n) {
  const LayerWeights& w = weights_.layers[layer];
  TensorView x = first_rows(s_.x, n), h = first_rows(s_.h, n);
  backend_.rms_norm(x, w.attn_norm, static_cast<float>(hp_.norm_eps), h);
  mamba2_->forward(layer, w, batch, h);
}

void Transformer::reduce_over_shard(const TensorView& partial) {
  if (shard_.size <= 1) return;
  // Scratch activations are contiguous host rows of f32 (the CPU backend: the only one that
  // runs sharded; a device backend would reduce in its own memory, e.g. through NCCL).
  const auto n = static_cast<size_t>(partial.elements());
  shard_.comm->all_reduce_sum(std::span<float>(static_cast<float*>(partial.data), n));
}

void Transformer::set_matmul_observer(MatmulObserver* observer) {
  if (observer != nullptr && latent_) {
    fail("activation statistics are not supported for the {} architecture yet (its latent attention runs its "
         "own matmuls)", hp_.architecture);
  }
  if (observer != nullptr && (mamba2_ || rwkv7_)) {
    fail("activation statistics are not supported for the {} architecture yet (state-space layers)", hp_.architecture);
  }
  if (observer != nullptr && experts_.comm != nullptr) {
    fail("activation statistics are not supported with expert parallelism (each rank holds some experts only)");
  }
  observer_ = observer;
  if (moe_) moe_->set_observer(observer);
  if (offload_) offload_->set_matmul_observer(observer);
}

void Transformer::shift_keys(KvCache& cache, std::span<const int32_t> blocks, int32_t delta) {
  if (cache.layout().n_groups() != 1) fail("context shift: the KV cache has {} layer groups", cache.layout().n_groups());
  if (latent_) fail("context shift is not supported for multi-head latent attention yet");
  if (mamba2_ || rwkv7_)
    fail("context shift is not possible for a state-space or RWKV model: its state holds every earlier token");
  // Keys without rope (ALiBi: BLOOM; SmolLM3's NoPE layers) carry no position: ALiBi's bias
  // reads the cache positions at attention time, which the shift has already moved. Rotating
  // them would corrupt them.
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    if (!layer_rotates(layer)) continue;
    const backend::RopeConfig& rope = layer_window_[layer] != 0 ? rope_local_ : rope_;
    backend_.shift_keys(cache.layer(layer), blocks, delta, rope, static_cast<int64_t>(hp_.head_dim));
  }
  if (offload_) offload_->shift_keys(cache, blocks, delta);
}

void Transformer::compact_kv(KvCache& cache, std::span<const int32_t> src, std::span<const int32_t> dst,
                             std::span<const int32_t> keep) {
  if (cache.layout().n_groups() != 1) fail("kv eviction: the KV cache has {} layer groups", cache.layout().n_groups());
  if (latent_) fail("importance-based KV eviction is not supported for multi-head latent attention");
  const size_t n_layers = weights_.layers.size();
  if (n_layers == 0 || keep.size() % n_layers != 0)
    fail("kv eviction: {} kept slots for {} layers", keep.size(), n_layers);
  const size_t per_layer = keep.size() / n_layers;
  const auto head_dim = static_cast<int64_t>(hp_.head_dim);
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    backend_.gather_kv_rows(cache.layer(layer), src, dst, keep.subspan(layer * per_layer, per_layer), head_dim,
                            attention_value_dim(attention_));
  }
  if (offload_) offload_->compact_kv(cache, src, dst, keep);
}

void Transformer::check_batch(const ForwardBatch& batch, const KvCache& cache) const {
  if (batch.positions.size() != batch.tokens.size()) fail("forward: one position per token");
  if (cache.n_layers() != weights_.layers.size() || batch.sequences.size() % cache.layout().n_groups() != 0) {
    fail("forward: {} sequence slices for a cache of {} layer groups ({} layers, the model has {})",
         batch.sequences.size(), cache.layout().n_groups(), cache.n_layers(), weights_.layers.size());
  }
  for (size_t layer = 0; layer < layer_window_.size(); ++layer) {
    // A group that drops blocks out of its window must attend with exactly that window.
    const int64_t kept = cache.layout().groups[static_cast<size_t>(cache.layout().group_of_layer[layer])].window;
    if (kept != 0 && kept != layer_window_[layer]) {
      fail("forward: the KV cache keeps a {}-token window for layer {}, which attends to {}", kept, layer,
           layer_window_[layer]);
    }
  }
  for (int32_t id : batch.tokens) {
    if (id < 0 || static_cast<uint64_t>(id) >= hp_.vocab_size) fail("token id {} is out of range", id);
  }
  check_embedding_spans(batch.embeddings, static_cast<int64_t>(batch.tokens.size()));
  // The other ranks and stages embed their own rows from the token ids alone.
  if (!batch.embeddings.empty() && (shard_.size > 1 || stage_.count > 1 || experts_.size > 1)) {
    fail("embedding inputs (images) are not supported with tensor, pipeline or expert parallelism yet");
  }
  if (!batch.embeddings.empty() && arch_.features.encoder) fail("embedding inputs (images) for an encoder model");
}

void Transformer::forward(const ForwardBatch& batch, KvCache& cache, float* logits) {
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  const int64_t n_out = static_cast<int64_t>(batch.logit_rows.size());
  if (n == 0) return;
  if (arch_.features.encoder) {
    fail("the {} model is an encoder: it computes embeddings (/v1/embeddings, lumen embed), not text",
         hp_.architecture);
  }
  check_batch(batch, cache);
  if (experts_.data_parallel_attention && !in_rank_rows_) {
    forward_data_parallel(batch, cache, logits);
    return;
  }
  if (context_.size > 1) {
    if (shares_context(batch, cache)) {
      forward_context_parallel(batch, cache, logits);
      return;
    }
    if (context_.rank != 0) return;  // rank 0 alone holds the cache that the other steps read
  }
  if (stage_.count > 1) {
    forward_pipelined(batch, cache, logits);
    return;
  }
  ensure_capacity(n, n_out);  // before the step: a step allocates nothing
  if (offload_) offload_->ensure_capacity(n, n_out);
  if (moe_) moe_->prepare_step(n);  // and reads back no routed counts
  const bool wants_logits = n_out != 0 && shard_.rank == 0 && logits != nullptr;
  // A split model's pass is a step of both backends; the second one's output head writes the
  // logits.
  backend::StepScope step(backend_, step_metadata(batch, cache, wants_logits && !offload_ ? logits : nullptr));
  std::optional<backend::StepScope> tail_step;
  if (offload_) tail_step.emplace(offload_->backend_, step_metadata(batch, cache, wants_logits ? logits : nullptr));
  const auto ops = [&] {
    embed(batch.tokens, n, batch.embeddings);
    Transformer& tail = run_all_layers(batch, cache, n);
    if (wants_logits) {
      // Only the sampled rows go through the final norm and the (large) output projection.
      TensorView picked = first_rows(tail.s_.logit_h, n_out);
      tail.backend_.get_rows(first_rows(tail.s_.x, n), batch.logit_rows, picked);
      tail.output_head(n_out, tail_step ? tail_step->logits() : step.logits());
    }
  };
  if (replayable(batch)) {
    bool ran = false;
    backend_.run_replayable([&] {
      ran = true;
      ops();
    });
    if (!ran && moe_) moe_->count_replayed_step(n);
  } else {
    ops();
  }
  if (tail_step) tail_step->finish();
  step.finish();
}

std::unique_ptr<backend::Buffer> Transformer::allocate_logits(size_t bytes) {
  return (offload_ ? offload_->backend_ : backend_).allocate_host(bytes);
}

void Transformer::copy_logit_rows(std::span<const int32_t> rows, float* logits) {
  (offload_ ? offload_->backend_ : backend_).copy_logit_rows(rows, logits);
}

// Whether a pass's ops depend only on its shape, the device memory they name and the step's
// metadata arrays (Backend::run_replayable): what reads other host data in a step (MoE routing on
// the host, state-space and latent layers' own host arrays, image rows, attention scores, an
// observer) or spans two backends or several processes is not. MoE layers routed on the backend
// keep the choice in its buffers (step_replay_test.cc checks their steps read alike).
bool Transformer::replayable(const ForwardBatch& batch) const {
  return !offload_ && (!moe_ || moe_->routes_on_backend()) && !latent_ && !mamba2_ && !rwkv7_ && observer_ == nullptr &&
         shard_.size <= 1 && stage_.count <= 1 && experts_.size <= 1 && context_.size <= 1 &&
         batch.embeddings.empty() && batch.scores.empty();
}

backend::StepMetadata Transformer::step_metadata(const ForwardBatch& batch, const KvCache& cache, float* logits) const {
  backend::StepMetadata step;
  step.tokens = batch.tokens;
  step.positions = batch.positions;
  step.sequences = batch.sequences;
  step.sequence_groups = cache.layout().n_groups();
  step.block_size = cache.block_size();
  step.logit_rows = batch.logit_rows;
  step.logits = logits;
  step.logit_width = static_cast<int64_t>(hp_.vocab_size);
  step.model = this;
  step.kv_cache = &cache;
  if (logits != nullptr) {  // the backend that writes the logits may reduce rows itself
    step.row_forms = batch.row_forms;
    step.argmax = batch.argmax;
    step.leading = batch.leading;
    step.leading_scale = batch.leading_scale;
  }
  return step;
}

void Transformer::forward_hidden(const ForwardBatch& batch, KvCache& cache, float* hidden) {
  if (shard_.size > 1 || stage_.count > 1 || experts_.size > 1) {
    fail("embeddings are not supported with tensor, pipeline or expert parallelism yet");
  }
  const int64_t n = static_cast<int64_t>(batch.tokens.size());
  const int64_t n_out = static_cast<int64_t>(batch.logit_rows.size());
  if (n == 0) return;
  check_batch(batch, cache);
  ensure_capacity(n, n_out);
  if (offload_) offload_->ensure_capacity(n, n_out);
  // A step without logits: the hidden rows come back by copy_to_host once it is over.
  backend::StepScope step(backend_, step_metadata(batch, cache, nullptr));
  std::optional<backend::StepScope> tail_step;
  if (offload_) tail_step.emplace(offload_->backend_, step_metadata(batch, cache, nullptr));
  Transformer* tail = this;
  if (arch_.features.encoder) {
    encode(batch, n);  // no output norm after an encoder's last block
  } else {
    embed(batch.tokens, n, batch.embeddings);
    tail = &run_all_layers(batch, cache, n);
  }
  TensorView picked = first_rows(tail->s_.logit_h, n_out);
  if (n_out != 0) {
    tail->backend_.get_rows(first_rows(tail->s_.x, n), batch.logit_rows, picked);
    if (!arch_.features.encoder) {
      tail->final_norm(picked);
    }
  }
  if (tail_step) tail_step->finish();
  step.finish();
  if (n_out != 0) tail->backend_.copy_to_host(picked, hidden);  // the rows are on the device
}

void Transformer::embed(std::span<const int32_t> tokens, int64_t n, std::span<const EmbeddingSpan> given) {
  TensorView x = first_rows(s_.x, n);
  backend_.get_rows(weights_.token_embd, tokens, x);
  if (arch_.features.layer_norm && weights_.token_embd_norm) {
    block_norm(x, *weights_.token_embd_norm, weights_.token_embd_norm_b, x);
  }
  if (arch_.features.embedding_scale) backend_.scale(x, std::sqrt(static_cast<float>(hp_.embedding_length)));
  if (embedding_scale_ != 1.0f) backend_.scale(x, embedding_scale_);
  place_embedding_spans(backend_, x, given);
  if (rwkv7_) rwkv7_->layer_norm(x, *weights_.token_embd_norm, *weights_.token_embd_norm_b);
}

void Transformer::final_norm(TensorView& picked) {
  if (rwkv7_) {
    rwkv7_->layer_norm(picked, weights_.output_norm, *weights_.output_norm_b);
  } else {
    block_norm(picked, weights_.output_norm, weights_.output_norm_b, picked);
  }
}

void Transformer::run_layers(const ForwardBatch& batch, KvCache& cache, int64_t n) {
  if (mamba2_) mamba2_->begin_batch(batch);
  if (rwkv7_) rwkv7_->begin_batch(batch);
  bool input_normed = false;  // the previous layer's residual add normed this layer's input
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    if (rwkv7_) {  // the whole block: both mixes and their residual adds
      TensorView x = first_rows(s_.x, n);
      rwkv7_->forward(layer, weights_.layers[layer], batch, x);
      continue;
    }
    if (is_ssm_layer(hp_, layer)) {
      mamba2_mix(layer, batch, n);
    } else {
      attention_block(layer, batch, cache, n, input_normed);
    }
    if (arch_.features.mixer == Mixer::Mamba2) {  // no FFN: the mixer's output joins the residual
      TensorView x = first_rows(s_.x, n);
      backend_.add(x, first_rows(s_.h, n), x);
    } else {
      input_normed = mlp_block(layer, n, fusable_next_attn_norm(layer));
    }
  }
}

void Transformer::output_head(int64_t n_out, TensorView out) {
  TensorView picked = first_rows(s_.logit_h, n_out);
  final_norm(picked);
  backend_.matmul(weights_.output_matrix(), picked, out);
  if (logit_divisor_ != 1.0f) backend_.scale(out, 1.0f / logit_divisor_);
  if (logit_softcap_ != 0.0f) {  // as llama.cpp computes it: scale, tanh, scale
    backend_.scale(out, 1.0f / logit_softcap_);
    backend_.activation(out, backend::Activation::Tanh);
    backend_.scale(out, logit_softcap_);
  }
}

}  // namespace lumen::model
