// The Backend's attention ops (attention, attention_scored) and importance-based KV eviction's
// (attention_scores, gather_kv_rows): check the arguments once for every backend, let the
// observers see the call, run the backend's do_* implementation.
#include <vector>

#include "backend/backend.h"
#include "backend/common/attention_checks.h"
#include "backend/common/kv_eviction_checks.h"
#include "backend/common/observed.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

[[noreturn]] void refuse_kv_eviction(std::string_view backend) {
  fail("importance-based KV eviction (snapkv, h2o) is not supported on the {} backend", backend);
}

}  // namespace

void Backend::attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                               const AttentionConfig& config, float* scores, int64_t slot_stride) {
  if (scores == nullptr) fail("attention_scores: no score table");
  if (first_row < 0 || first_row > seq.n_tokens) {
    fail("attention_scores: first row {} is outside the slice's {} rows", first_row, seq.n_tokens);
  }
  if (!supports(BackendFeature::KvEviction)) refuse_kv_eviction(name());
  common::check_attention_scores(cache, seq, config);
  OpCall call{OpKind::AttentionScores};
  call.in = {&q};
  call.seqs = std::span<const SequenceSlice>(&seq, 1);
  call.cache = &cache;
  call.attention = &config;
  call.numbers = {first_row, slot_stride};
  call.host_out = scores;
  observed(call, [&] { do_attention_scores(q, cache, seq, first_row, config, scores, slot_stride); });
}

void Backend::do_attention_scores(const TensorView&, const KvLayer&, const SequenceSlice&, int64_t,
                                  const AttentionConfig&, float*, int64_t) {
  refuse_kv_eviction(name());
}

void Backend::gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                             std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim) {
  if (!supports(BackendFeature::KvEviction)) refuse_kv_eviction(name());
  common::check_gather_kv_rows(cache, src_table, dst_table, keep, head_dim);
  OpCall call{OpKind::GatherKvRows};
  call.cache = &cache;
  call.src_table = src_table;
  call.dst_table = dst_table;
  call.indices = keep;
  call.numbers = {head_dim, value_dim};
  observed(call, [&] { do_gather_kv_rows(cache, src_table, dst_table, keep, head_dim, value_dim); });
}

void Backend::do_gather_kv_rows(KvLayer&, std::span<const int32_t>, std::span<const int32_t>, std::span<const int32_t>,
                                int64_t, int64_t) {
  refuse_kv_eviction(name());
}

// attention's and attention_scored's checks, beside the shared shape checks: what this backend
// can mask and bias.
void Backend::check_attention_call(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                                   const AttentionConfig& config, const TensorView& out) const {
  common::check_attention_inputs(q, cache, seqs, config, out);
  if (!supports_tree_attention()) {
    for (const SequenceSlice& seq : seqs) {
      if (!seq.visible.empty()) fail("attention: the {} backend does not take a tree attention mask", name());
    }
  }
  if (!supports(BackendFeature::SpanAttention)) {
    for (const SequenceSlice& seq : seqs) {
      if (!seq.key_ends.empty()) fail("attention: the {} backend does not take spans that attend both ways", name());
    }
  }
  if (config.alibi_max_bias != 0.0f && !supports(BackendFeature::Alibi)) {
    fail("attention: the {} backend does not apply ALiBi biases", name());
  }
  if (config.sinks != nullptr && !supports(BackendFeature::AttentionSinks)) {
    fail("attention: the {} backend does not take attention sinks", name());
  }
}

void Backend::attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                        const AttentionConfig& config, TensorView& out) {
  check_attention_call(q, cache, seqs, config, out);
  OpCall call{OpKind::Attention};
  call.in = {&q};
  call.out = {&out};
  call.seqs = seqs;
  call.cache = &cache;
  call.attention = &config;
  observed(call, [&] { do_attention(q, cache, seqs, config, out); });
}

void Backend::attention_scored(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                               const AttentionConfig& config, std::span<const AttentionScoreTarget> targets,
                               TensorView& out) {
  require_op(OpKind::AttentionScored);
  check_attention_call(q, cache, seqs, config, out);
  if (config.alibi_max_bias != 0.0f && !targets.empty()) {
    fail("importance-based KV eviction does not score ALiBi models");
  }
  if (config.sinks != nullptr && !targets.empty()) {
    fail("importance-based KV eviction does not score models with attention sinks");
  }
  std::vector<bool> scored(seqs.size(), false);
  for (const AttentionScoreTarget& t : targets) {
    if (t.sequence >= seqs.size()) fail("attention_scored: target sequence {} of {}", t.sequence, seqs.size());
    if (scored[t.sequence]) fail("attention_scored: sequence {} is a target twice", t.sequence);
    scored[t.sequence] = true;
    const SequenceSlice& seq = seqs[t.sequence];
    if (t.scores == nullptr) fail("attention_scored: no score table");
    if (t.first_row < 0 || t.first_row > seq.n_tokens) {
      fail("attention_scored: first row {} is outside the slice's {} rows", t.first_row, seq.n_tokens);
    }
    if (t.slot_stride < config.n_kv_heads) {
      fail("attention_scored: a slot stride of {} for {} KV heads", t.slot_stride, config.n_kv_heads);
    }
    if (!seq.visible.empty()) fail("importance-based KV eviction does not score token-tree rows");
    if (!seq.key_ends.empty()) fail("importance-based KV eviction does not score rows of spans that attend both ways");
  }
  OpCall call{OpKind::AttentionScored};
  call.in = {&q};
  call.out = {&out};
  call.seqs = seqs;
  call.score_targets = targets;
  call.cache = &cache;
  call.attention = &config;
  observed(call, [&] { do_attention_scored(q, cache, seqs, config, targets, out); });
}

void Backend::do_attention_scored(const TensorView&, const KvLayer&, std::span<const SequenceSlice>,
                                  const AttentionConfig&, std::span<const AttentionScoreTarget>, TensorView&) {
  refuse_op(OpKind::AttentionScored);
}

}  // namespace lumen::backend
