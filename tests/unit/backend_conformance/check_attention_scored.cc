// attention_scored, a declared op: the attention and, for its target sequences, the importance
// scores (engine/kv_importance.h) from the same pass. Its output must be bit for bit the
// backend's own attention; each target's table must gain, per slot and KV head, the
// probabilities its rows from first_row on give that slot, summed over the KV head's query
// heads, against softmax attention in double; entries past the KV heads (the table's stride)
// and unscored sequences stay as they were.
//
// Tolerance, per table entry: the sum over its terms of p * (2 * score error + 2^-11) plus 1e-6
// (an f16 cache: queries rounded to f16 before q.k as attention's conformance allows, and the
// probabilities as P V uses them, rounded to f16); an f32 cache only sums in another order.
//
// Row: {head_dim, query heads, KV heads}; mode 0 an f16 cache, 1 with a sliding window of 8,
// 2 with a soft cap, 3 an f32 cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "checks.h"
#include "kv_cache.h"
#include "registered_ops.h"
#include "tensor_io.h"
#include "util/error.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

struct Sequence {
  int64_t n_tokens;
  int64_t start_pos;
  std::vector<int32_t> blocks;
  int64_t first_scored_row;  // -1: not a target
};

void check_attention_scored(Backend& backend, const RegisteredRow& row) {
  const int64_t head_dim = row.shape[0], heads = row.shape[1], kv_heads = row.shape[2];
  const DType type = row.mode == 3 ? DType::F32 : DType::F16;
  AttentionConfig config;
  config.n_heads = heads;
  config.n_kv_heads = kv_heads;
  config.head_dim = head_dim;
  config.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  if (row.mode == 1) config.sliding_window = 8;
  if (row.mode == 2) config.softcap = 0.75f;
  const int64_t kv_dim = head_dim * kv_heads, block_size = 16, n_blocks = 48;
  // A prompt chunk scored from its third row, an unscored decode row, a scored decode row deep
  // in its context (several of the CPU's key chunks), a prefill scored whole.
  const std::vector<Sequence> sequences = {
      {30, 9, {6, 5, 7}, 2}, {1, 37, {1, 3, 4}, -1}, {1, 520, {}, 0}, {6, 0, {2}, 0}};
  std::vector<Sequence> seqs = sequences;
  for (int32_t b = 0; b < 33; ++b) seqs[2].blocks.push_back(47 - b);
  BackendCache cache = make_cache(backend, type, kv_dim, block_size, n_blocks);

  std::vector<SequenceSlice> history;
  int64_t history_rows = 0;
  for (const Sequence& s : seqs) {
    history.push_back({history_rows, s.start_pos + s.n_tokens, 0, s.blocks});
    history_rows += s.start_pos + s.n_tokens;
  }
  const std::vector<float> k = random_values(static_cast<size_t>(kv_dim * history_rows), 81, -1.5f, 1.5f);
  const std::vector<float> v = random_values(static_cast<size_t>(kv_dim * history_rows), 82);
  const BackendTensor kd = upload_f32(backend, {kv_dim, history_rows, 1, 1}, k);
  const BackendTensor vd = upload_f32(backend, {kv_dim, history_rows, 1, 1}, v);
  backend.store_kv(kd.view, vd.view, history, cache.layer);

  std::vector<SequenceSlice> batch;
  int64_t tokens = 0;
  for (const Sequence& s : seqs) {
    batch.push_back({tokens, s.n_tokens, s.start_pos, s.blocks});
    tokens += s.n_tokens;
  }
  const std::vector<float> q = random_values(static_cast<size_t>(head_dim * heads * tokens), 83, -1.5f, 1.5f);
  const BackendTensor qd = upload_f32(backend, {head_dim, heads, tokens, 1}, q);
  BackendTensor out = allocate(backend, DType::F32, {head_dim, heads, tokens, 1});
  BackendTensor plain = allocate(backend, DType::F32, {head_dim, heads, tokens, 1});

  const int64_t stride = kv_heads + 1;  // the last column is no KV head's: it must stay 0.5
  std::vector<std::vector<float>> tables;
  std::vector<AttentionScoreTarget> targets;
  for (size_t si = 0; si < seqs.size(); ++si) {
    tables.emplace_back(static_cast<size_t>((seqs[si].start_pos + seqs[si].n_tokens) * stride), 0.5f);
  }
  for (size_t si = 0; si < seqs.size(); ++si) {
    if (seqs[si].first_scored_row >= 0) targets.push_back({si, seqs[si].first_scored_row, tables[si].data(), stride});
  }
  backend.attention_scored(qd.view, cache.layer, batch, config, targets, out.view);
  backend.attention(qd.view, cache.layer, batch, config, plain.view);
  EXPECT_EQ(download(backend, out.view), download(backend, plain.view)) << "the output differs from attention's";

  const std::vector<float> ks = stored_rows(type, k, kv_dim);
  const double f16_unit = type == DType::F16 ? std::ldexp(1.0, -11) : 0.0;
  for (size_t si = 0; si < seqs.size(); ++si) {
    const Sequence& s = seqs[si];
    const int64_t n_slots = s.start_pos + s.n_tokens;
    std::vector<double> want(static_cast<size_t>(n_slots * stride), 0.5), tol(want.size(), 1e-6);
    for (int64_t i = std::max<int64_t>(0, s.first_scored_row); s.first_scored_row >= 0 && i < s.n_tokens; ++i) {
      const int64_t pos = s.start_pos + i;
      const int64_t lo = config.sliding_window > 0 ? std::max<int64_t>(0, pos - config.sliding_window + 1) : 0;
      for (int64_t h = 0; h < heads; ++h) {
        const float* qh = q.data() + ((batch[si].first_token + i) * heads + h) * head_dim;
        const int64_t kvh = h / (heads / kv_heads);
        std::vector<double> p;
        double score_error = 0.0;
        for (int64_t key = lo; key <= pos; ++key) {
          double dot = 0.0, magnitude = 0.0;
          for (int64_t d = 0; d < head_dim; ++d) {
            const double kv = ks[static_cast<size_t>((history[si].first_token + key) * kv_dim + kvh * head_dim + d)];
            dot += qh[d] * kv;
            magnitude += std::abs(qh[d] * kv);
          }
          double score = dot * config.scale;
          if (config.softcap > 0.0f) score = config.softcap * std::tanh(score / config.softcap);
          p.push_back(score);
          score_error = std::max(score_error, magnitude * config.scale * f16_unit);
        }
        const double top = *std::max_element(p.begin(), p.end());
        double sum = 0.0;
        for (double& x : p) sum += (x = std::exp(x - top));
        for (int64_t key = lo; key <= pos; ++key) {
          const double prob = p[static_cast<size_t>(key - lo)] / sum;
          want[static_cast<size_t>(key * stride + kvh)] += prob;
          tol[static_cast<size_t>(key * stride + kvh)] += prob * (4.0 * score_error + 2.0 * f16_unit) + 1e-7;
        }
      }
    }
    expect_close(tables[si], want, tol, "scores of sequence " + std::to_string(si));
  }
}

// SmolLM2's heads (64 dims, 3 query heads per KV head), Gemma 3's (one KV head) with its window,
// a soft cap, and an f32 cache (no probabilities held: attention_scores' arithmetic).
const bool kAttentionScoredRegistered =
    register_op({OpKind::AttentionScored,
                 {{{64, 6, 2}, 0}, {{64, 4, 1}, 1}, {{32, 4, 2}, 2}, {{32, 4, 4}, 3}},
                 check_attention_scored});

// Bad targets are refused before anything is written, and a backend without the op names itself.
TEST(AttentionScored, RefusesBadTargetsAndBackendsWithoutIt) {
  constexpr int64_t kDim = 8, kHeads = 2;
  CpuBackend cpu(1);
  BackendCache cache = make_cache(cpu, DType::F16, kDim * kHeads, 16, 2);
  const std::vector<int32_t> blocks = {0};
  const std::vector<SequenceSlice> seqs = {{0, 3, 0, blocks}};
  std::vector<float> qv(kDim * kHeads * 3, 0.5f), ov(kDim * kHeads * 3, 42.0f), table(3 * kHeads, 42.0f);
  const TensorView q{DType::F32, {kDim, kHeads, 3, 1}, kDim * sizeof(float), qv.data()};
  TensorView o{DType::F32, {kDim, kHeads, 3, 1}, kDim * sizeof(float), ov.data()};
  AttentionConfig config;
  config.n_heads = kHeads;
  config.n_kv_heads = kHeads;
  config.head_dim = kDim;
  config.scale = 0.25f;
  auto refused = [&](Backend& backend, std::vector<AttentionScoreTarget> targets, const char* why) {
    try {
      backend.attention_scored(q, cache.layer, seqs, config, targets, o);
      ADD_FAILURE() << why << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
    EXPECT_TRUE(std::all_of(ov.begin(), ov.end(), [](float x) { return x == 42.0f; })) << why;
    EXPECT_TRUE(std::all_of(table.begin(), table.end(), [](float x) { return x == 42.0f; })) << why;
  };
  refused(cpu, {{1, 0, table.data(), kHeads}}, "target sequence 1 of 1");
  refused(cpu, {{0, 0, table.data(), kHeads}, {0, 1, table.data(), kHeads}}, "sequence 0 is a target twice");
  refused(cpu, {{0, 4, table.data(), kHeads}}, "first row 4 is outside the slice's 3 rows");
  refused(cpu, {{0, 0, nullptr, kHeads}}, "no score table");
  refused(cpu, {{0, 0, table.data(), 1}}, "a slot stride of 1 for 2 KV heads");

  cpu.set_composed_ops(true);  // has_op false for every declared op, as a backend without them
  refused(cpu, {{0, 0, table.data(), kHeads}}, "the cpu backend has no attention_scored");
}

}  // namespace
}  // namespace lumen::backend::conformance
