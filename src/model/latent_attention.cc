#include "model/latent_attention.h"

#include <cmath>
#include <numeric>

#include "util/error.h"

namespace lumen::model {

namespace {

using backend::TensorView;
using backend::first_rows;


// Columns [begin, begin + width) of each row of a 2-D f32 matrix, seen as `groups` rows of
// `width` per matrix row when the matrix row is `groups` equal parts (heads): a strided view.
TensorView columns(const TensorView& m, int64_t begin, int64_t width, int64_t groups = 1) {
  TensorView view = m;
  view.dims = {width, groups, m.dims[1], 1};
  view.row_bytes = m.row_bytes / static_cast<size_t>(groups);
  view.data = static_cast<float*>(m.data) + begin;
  return view;
}

// Head h's `width` columns starting at `begin` of a {heads x part, n} matrix, as a {width, n}
// matrix whose rows are a whole matrix row apart.
TensorView head_columns(const TensorView& m, int64_t part, int64_t h, int64_t begin, int64_t width) {
  TensorView view = m;
  view.dims = {width, m.dims[1], 1, 1};
  view.data = static_cast<float*>(m.data) + h * part + begin;
  return view;
}

}  // namespace

float latent_attention_scale(const HParams& hp) {
  const std::string& type = hp.rope_scaling.type;
  const bool scaled = type == "linear" || type == "yarn";
  const float freq_scale = scaled ? 1.0f / static_cast<float>(hp.rope_scaling.factor) : 1.0f;
  const float log_mul = static_cast<float>(hp.rope_yarn_log_mul) / 0.1f;  // the converter wrote 0.1 m
  // llama.cpp's context attention factor: for YaRN, mscale(f, m) / mscale(f, m) (1) when the
  // file has the multiplier, else mscale(f, 1); then the 1 + 0.1 ln f ggml's rope applies
  // again is cancelled; then the file's factor.
  float attn_factor = 1.0f;
  if (type == "yarn") {
    const float factor = 1.0f / freq_scale;
    if (log_mul == 0.0f) attn_factor = factor <= 1.0f ? 1.0f : 0.1f * std::log(factor) + 1.0f;
    attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
  }
  attn_factor *= static_cast<float>(hp.rope_scaling.attn_factor);
  // The deepseek2 graph undoes the cancellation and multiplies DeepSeek's own mscale.
  const float original = attn_factor * (1.0f + 0.1f * std::log(1.0f / freq_scale));
  const float mscale = original * (1.0f + 0.1f * log_mul * std::log(1.0f / freq_scale));
  return 1.0f * mscale * mscale / std::sqrt(static_cast<float>(hp.key_length_mla));
}

LatentAttention::LatentAttention(backend::Backend& backend, const HParams& hp, const backend::RopeConfig& rope)
    : backend_(backend),
      rope_(rope),
      heads_(static_cast<int64_t>(hp.head_count)),
      q_lora_(static_cast<int64_t>(hp.q_lora_rank)),
      rank_(static_cast<int64_t>(hp.kv_lora_rank)),
      rope_dims_(static_cast<int64_t>(hp.rope_dimension_count)),
      key_mla_(static_cast<int64_t>(hp.key_length_mla)),
      nope_(static_cast<int64_t>(hp.key_length_mla - hp.rope_dimension_count)),
      value_mla_(static_cast<int64_t>(hp.value_length_mla)),
      eps_(static_cast<float>(hp.norm_eps)) {
  if (!is_mla(hp)) fail("{}: latent attention needs kv_lora_rank, key_length_mla and value_length_mla", hp.architecture);
  attention_.n_heads = heads_;
  attention_.n_kv_heads = 1;
  attention_.head_dim = rank_ + rope_dims_;
  attention_.value_dim = rank_;
  attention_.scale = latent_attention_scale(hp);
}

void LatentAttention::ensure_capacity(int64_t n) {
  if (n <= capacity_) return;
  capacity_ = n;
  buffers_.clear();
  auto matrix = [&](int64_t cols, int64_t rows) {
    buffers_.push_back(backend_.allocate(static_cast<size_t>(cols * rows) * sizeof(float)));
    return backend::f32_matrix(static_cast<float*>(buffers_.back()->data()), cols, rows);
  };
  if (q_lora_ != 0) q_a_ = matrix(q_lora_, n);
  q_ = matrix(heads_ * key_mla_, n);
  latent_ = matrix(rank_ + rope_dims_, n);
  query_ = matrix(heads_ * (rank_ + rope_dims_), n);
  latent_out_ = matrix(heads_ * rank_, n);
  values_ = matrix(heads_ * value_mla_, n);
  iota_.resize(static_cast<size_t>(heads_ * n));
  std::iota(iota_.begin(), iota_.end(), 0);
}

void LatentAttention::forward(const LayerWeights& w, const TensorView& h, std::span<const int32_t> positions,
                              std::span<const backend::SequenceSlice> sequences, backend::KvLayer& cache,
                              TensorView& out) {
  if (!w.wkv_a_mqa || !w.kv_a_norm || !w.wk_b || !w.wv_b || (q_lora_ != 0 && (!w.wq_a || !w.q_a_norm || !w.wq_b))) {
    fail("latent attention: a layer without its latent or query matrices");
  }
  const int64_t n = h.rows();
  ensure_capacity(n);
  TensorView q = first_rows(q_, n), latent = first_rows(latent_, n), query = first_rows(query_, n);
  TensorView latent_out = first_rows(latent_out_, n), values = first_rows(values_, n);

  // Queries and the latent row in one job over h (through the bottleneck for V2 and V3).
  if (q_lora_ != 0) {
    TensorView q_a = first_rows(q_a_, n);
    const backend::Backend::MatmulOutput first[] = {{&*w.wq_a, &q_a}, {&*w.wkv_a_mqa, &latent}};
    backend_.matmul_same_input(h, first);
    backend_.rms_norm(q_a, *w.q_a_norm, eps_, q_a);
    backend_.matmul(*w.wq_b, q_a, q);
  } else {
    const backend::Backend::MatmulOutput first[] = {{&w.wq, &q}, {&*w.wkv_a_mqa, &latent}};
    backend_.matmul_same_input(h, first);
  }
  // The cached row: [norm(latent) | rope(key)].
  TensorView compressed = columns(latent, 0, rank_), rope_key = columns(latent, rank_, rope_dims_);
  backend_.rms_norm(compressed, *w.kv_a_norm, eps_, compressed);
  backend_.rope(rope_key, positions, rope_);
  backend_.store_kv(latent, latent, sequences, cache);  // values are the latent: not stored twice

  // Each head's query in the row's space: [wk_b_h^T q_nope_h | rope(q_rope_h)].
  const int64_t row = rank_ + rope_dims_;
  for (int64_t head = 0; head < heads_; ++head) {
    const TensorView absorb = backend::expert_matrix(*w.wk_b, head);
    TensorView into = head_columns(query, row, head, 0, rank_);
    backend_.matmul(absorb, head_columns(q, key_mla_, head, 0, nope_), into);
  }
  TensorView q_rope = columns(q, nope_, rope_dims_, heads_);
  backend_.rope(q_rope, positions, rope_);
  TensorView query_rope = columns(query, rank_, rope_dims_, heads_);
  TensorView q_rope_rows = q_rope, query_rope_rows = query_rope;
  q_rope_rows.dims = {rope_dims_, heads_ * n, 1, 1};
  query_rope_rows.dims = {rope_dims_, heads_ * n, 1, 1};
  backend_.get_rows(q_rope_rows, std::span(iota_).first(static_cast<size_t>(heads_ * n)), query_rope_rows);

  TensorView query_heads = query, out_heads = latent_out;
  query_heads.dims = {row, heads_, n, 1};
  query_heads.row_bytes = static_cast<size_t>(row) * sizeof(float);
  out_heads.dims = {rank_, heads_, n, 1};
  out_heads.row_bytes = static_cast<size_t>(rank_) * sizeof(float);
  backend_.attention(query_heads, cache, sequences, attention_, out_heads);

  // Each head's value from its latent output, then the output projection over all heads.
  for (int64_t head = 0; head < heads_; ++head) {
    const TensorView expand = backend::expert_matrix(*w.wv_b, head);
    TensorView into = head_columns(values, value_mla_, head, 0, value_mla_);
    backend_.matmul(expand, head_columns(latent_out, rank_, head, 0, rank_), into);
  }
  backend_.matmul(w.wo, values, out);
}

}  // namespace lumen::model
