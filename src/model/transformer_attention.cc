// A transformer layer's attention block (transformer.h): the normed input's Q, K and V, rope and
// the K/V store (fused where the backend has rope_store_kv), the attention itself (with the rows
// KV eviction scores), and the output projection.
#include "model/transformer.h"

namespace lumen::model {

namespace {

using backend::as_heads;
using backend::first_rows;
using backend::TensorView;

}  // namespace

void Transformer::attention_block(size_t layer, const ForwardBatch& batch, KvCache& cache, int64_t n,
                                  bool input_normed) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t head_dim = static_cast<int64_t>(hp_.head_dim);
  TensorView q = first_rows(s_.q, n), k = first_rows(s_.k, n), v = first_rows(s_.v, n);
  TensorView attn = first_rows(s_.attn, n);
  if (latent_) {
    TensorView x = first_rows(s_.x, n), h = first_rows(s_.h, n);
    backend_.rms_norm(x, w.attn_norm, static_cast<float>(hp_.norm_eps), h);
    const size_t n_seqs = batch.sequences.size() / cache.layout().n_groups();
    const auto group = static_cast<size_t>(cache.layout().group_of_layer[layer]);
    // The output may overwrite h: the normed input is read only before the output projection.
    latent_->forward(w, h, batch.positions, batch.sequences.subspan(group * n_seqs, n_seqs), cache.layer(layer), h);
    return;  // mlp_block adds h to the residual
  }
  const size_t n_groups = cache.layout().n_groups();
  const size_t n_seqs = batch.sequences.size() / n_groups;
  const auto group = static_cast<size_t>(cache.layout().group_of_layer[layer]);
  const std::span<const backend::SequenceSlice> sequences = batch.sequences.subspan(group * n_seqs, n_seqs);
  backend::KvLayer& kv = cache.layer(layer);
  // The keys go into the cache in rope's own op where the backend fuses the two (one launch for
  // three on a GPU); a rotated cache takes its keys rotated after rope, so those store apart.
  const bool store_with_rope = layer_rotates(layer) && !kv.rotated && backend_.has_op(backend::OpKind::RopeStoreKv);
  const KvStore store{sequences, &kv};
  attention_inputs(layer, batch.positions, n, store_with_rope ? &store : nullptr, input_normed);
  TensorView q_heads = as_heads(q, n, head_dim);
  if (kv.rotated) {  // a quantized cache stores rotated heads (backend::KvLayer::rotated)
    backend_.rotate_heads(q, head_dim);
    backend_.rotate_heads(k, head_dim);
    backend_.rotate_heads(v, head_dim);
  }
  if (!store_with_rope) backend_.store_kv(k, v, sequences, kv);
  TensorView attn_heads = as_heads(attn, n, head_dim);
  backend::AttentionConfig attention = attention_;
  attention.sliding_window = layer_window_[layer];
  if (w.attn_sinks) attention.sinks = w.attn_sinks->row<const float>(0);
  attend(layer, q_heads, kv, sequences, attention, batch.scores, attn_heads);
  // The output is a weighted sum of rotated values: one more rotation (its own inverse) undoes it.
  if (kv.rotated) backend_.rotate_heads(attn, head_dim);
  attention_output(layer, n);
}

// The attention, and the rows eviction scores added to their tables (engine/kv_importance.h):
// from the attention's own pass where the backend can (attention_scored), else by a second.
void Transformer::attend(size_t layer, const TensorView& q_heads, backend::KvLayer& kv,
                         std::span<const backend::SequenceSlice> sequences, const backend::AttentionConfig& attention,
                         std::span<const ForwardBatch::ScoreRequest> scores, TensorView& out) {
  if (scores.empty()) {
    backend_.attention(q_heads, kv, sequences, attention, out);
    return;
  }
  const auto n_lh = static_cast<int64_t>(hp_.head_count_kv * hp_.block_count);
  const auto layer_offset = static_cast<int64_t>(layer * hp_.head_count_kv);
  if (backend_.has_op(backend::OpKind::AttentionScored)) {
    std::vector<backend::AttentionScoreTarget> targets;
    targets.reserve(scores.size());
    for (const ForwardBatch::ScoreRequest& r : scores) {
      targets.push_back({r.sequence, r.first_row, r.scores + layer_offset, n_lh});
    }
    backend_.attention_scored(q_heads, kv, sequences, attention, targets, out);
    return;
  }
  backend_.attention(q_heads, kv, sequences, attention, out);
  for (const ForwardBatch::ScoreRequest& r : scores) {
    backend_.attention_scores(q_heads, kv, sequences[r.sequence], r.first_row, attention, r.scores + layer_offset,
                              n_lh);
  }
}

void Transformer::attention_inputs(size_t layer, std::span<const int32_t> positions, int64_t n, const KvStore* store,
                                   bool input_normed) {
  const LayerWeights& w = weights_.layers[layer];
  const int64_t head_dim = static_cast<int64_t>(hp_.head_dim);
  TensorView x = first_rows(s_.x, n), h = first_rows(s_.h, n);
  TensorView q = first_rows(s_.q, n), k = first_rows(s_.k, n), v = first_rows(s_.v, n);
  if (!input_normed) block_norm(x, w.attn_norm, w.attn_norm_b, h);
  observe(w.wq, h);
  observe(w.wk, h);
  observe(w.wv, h);
  const backend::Backend::MatmulOutput qkv[] = {{&w.wq, &q}, {&w.wk, &k}, {&w.wv, &v}};
  backend_.matmul_same_input(h, qkv);
  if (w.bq) backend_.add_row(q, *w.bq);
  if (w.bk) backend_.add_row(k, *w.bk);
  if (w.bv) backend_.add_row(v, *w.bv);

  TensorView q_heads = as_heads(q, n, head_dim), k_heads = as_heads(k, n, head_dim);
  const float eps = static_cast<float>(hp_.norm_eps);
  if (arch_.features.qk_norm_full_width) {
    if (w.q_norm) backend_.rms_norm(q, *w.q_norm, eps, q);
    if (w.k_norm) backend_.rms_norm(k, *w.k_norm, eps, k);
  } else {
    if (w.q_norm) backend_.rms_norm(q_heads, *w.q_norm, eps, q_heads);
    if (w.k_norm) backend_.rms_norm(k_heads, *w.k_norm, eps, k_heads);
  }
  const backend::RopeConfig& rope = layer_window_[layer] != 0 ? rope_local_ : rope_;
  if (store != nullptr) {  // the query scale below touches q only, so storing first changes nothing
    backend_.rope_store_kv(q_heads, k_heads, v, positions, rope, store->sequences, *store->cache);
  } else if (layer_rotates(layer)) {
    backend_.rope(q_heads, positions, rope);
    backend_.rope(k_heads, positions, rope);
  }
  if (query_scale_ != 1.0f) backend_.scale(q, query_scale_);
}

void Transformer::attention_output(size_t layer, int64_t n) {
  const LayerWeights& w = weights_.layers[layer];
  TensorView h = first_rows(s_.h, n), attn = first_rows(s_.attn, n);
  const float eps = static_cast<float>(hp_.norm_eps);
  observe(w.wo, attn);
  backend_.matmul(w.wo, attn, h);
  reduce_over_shard(h);
  if (w.bo) backend_.add_row(h, *w.bo);
  if (w.attn_post_norm) backend_.rms_norm(h, *w.attn_post_norm, eps, h);
  // mlp_block adds h to the residual
}

}  // namespace lumen::model
