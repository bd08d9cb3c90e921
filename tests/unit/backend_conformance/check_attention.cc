// attention against causal softmax attention in double over the values the cache holds (f16
// caches: keys and values rounded by store_kv; compressed caches, bf16 / q8_0 / q4_0 / fp8:
// the stored rows dequantized, so this is "dequantize the cache, then attend in f32"). Three sequences share the batch:
// a prefill from position 0, a single decoded token deep in its context, and a chunk in the middle of a prompt, each
// with its own out-of-order block table.
//
// Tolerance: with an f32 cache only summation order differs (3e-5 of the largest |v|: a split-KV
// online softmax, as CUDA's, orders its f32 sums differently from the CPU's tiles). With an
// f16 cache the backends round each query to f16 before q.k and, on llama.cpp's default path,
// the probabilities to f16 before P V (with a compressed cache queries stay f32 and P V runs in
// f32, so only summation order differs, as with f32): a score moves by at most scale * sum |q k| * 2^-11 and a
// probability by 2^-11 of itself, so the output moves by about (2 * that score error + 2^-11)
// times the largest |v|; we allow that plus 3e-5.
//
// The latent mode (multi-head latent attention) has one KV head whose cache rows are the values
// followed by a rope part: the cache's V is a view of its K (store_kv stores the keys only), and
// each head's output is value_dim wide. The span modes give two slices rows that attend both
// ways within a span (SequenceSlice::key_ends: a row sees up to its span's end, keys past its own
// position included; under ALiBi those are penalised by their distance too). The sink modes give
// each head a sink logit (in the backend's memory) that joins its rows' max and sum as a key
// without a value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "checks.h"
#include "kv_cache.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

struct Sequence {
  int64_t n_tokens;
  int64_t start_pos;
  std::vector<int32_t> blocks;
};

AttentionConfig config_for(AttentionMode mode, int64_t head_dim, int64_t heads, int64_t kv_heads) {
  AttentionConfig config;
  config.n_heads = heads;
  config.n_kv_heads = kv_heads;
  config.head_dim = head_dim;
  config.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  if (mode == AttentionMode::kWindow || mode == AttentionMode::kWindowSinks) config.sliding_window = 8;
  if (mode == AttentionMode::kSoftcap) config.softcap = 0.75f;
  if (mode == AttentionMode::kAlibi || mode == AttentionMode::kAlibiSpan) config.alibi_max_bias = 8.0f;
  if (mode == AttentionMode::kLatent) config.value_dim = head_dim - kLatentRopeDims;
  return config;
}

// ALiBi's slope of head h of n (llama.cpp's convention), from the formula in double.
double alibi_slope(const AttentionConfig& config, int64_t h) {
  if (config.alibi_max_bias == 0.0f) return 0.0;
  int64_t n2 = 1;
  while (n2 * 2 <= config.n_heads) n2 *= 2;
  const double bias = config.alibi_max_bias;
  return h < n2 ? std::pow(2.0, -bias * static_cast<double>(h + 1) / static_cast<double>(n2))
                : std::pow(2.0, -bias / 2.0 * static_cast<double>(2 * (h - n2) + 1) / static_cast<double>(n2));
}

// Head h's sink logit in the sink modes (the scores lie within about +-3): far below them, among
// them, above them, far above them (the sink takes nearly all the weight); the order changes
// every 4 heads, so a head index off by a GQA group reads another level.
std::vector<float> sinks_for(int64_t heads) {
  constexpr float kLevels[] = {-30.0f, 0.5f, 3.0f, 25.0f};
  std::vector<float> sinks;
  for (int64_t h = 0; h < heads; ++h) sinks.push_back(kLevels[(h + h / 4) % 4] + 0.125f * static_cast<float>(h));
  return sinks;
}

}  // namespace

void check_attention(Backend& backend, const Case& c) {
  // Plain variables, not a structured binding: clang 14 cannot capture those in a lambda.
  const int64_t head_dim = c.shape[0], heads = c.shape[1], kv_heads = c.shape[2];
  AttentionConfig config = config_for(static_cast<AttentionMode>(c.mode), head_dim, heads, kv_heads);
  // Sinks in the backend's memory, as a model uploads them; -inf for none in the reference.
  const bool with_sinks =
      c.mode == static_cast<int>(AttentionMode::kSinks) || c.mode == static_cast<int>(AttentionMode::kWindowSinks);
  const std::vector<float> sinks = with_sinks ? sinks_for(heads) : std::vector<float>(heads, -INFINITY);
  std::optional<BackendTensor> device_sinks;
  if (with_sinks) {
    device_sinks.emplace(upload_f32(backend, {heads, 1, 1, 1}, sinks));
    config.sinks = static_cast<const float*>(device_sinks->view.data);
  }
  const int64_t kv_dim = head_dim * kv_heads, block_size = 16, n_blocks = 7;
  const int64_t value_dim = attention_value_dim(config);
  const bool latent = static_cast<AttentionMode>(c.mode) == AttentionMode::kLatent;
  const std::vector<Sequence> sequences = {{6, 0, {2, 0}}, {1, 37, {1, 3, 4}}, {4, 9, {6, 5}}};
  const auto mode = static_cast<AttentionMode>(c.mode);
  // With spans: rows 1-4 of the prefill attend to each other both ways, and rows 0-2 of the
  // chunk; the other rows are causal (key end = own position + 1).
  std::vector<std::vector<int32_t>> key_ends(sequences.size());
  if (mode == AttentionMode::kSpan || mode == AttentionMode::kAlibiSpan) {
    key_ends[0] = {1, 5, 5, 5, 5, 6};
    key_ends[2] = {12, 12, 12, 13};
  }
  BackendCache cache = make_cache(backend, c.type, kv_dim, block_size, n_blocks);
  if (latent) {  // the values are the keys' leading part: a narrower view of the same rows
    cache.layer.v = cache.layer.k;
    cache.layer.v.dims[0] = value_dim * kv_heads;
  }

  // First every sequence's keys and values for positions [0, end), as earlier steps and this
  // one would have stored them.
  std::vector<SequenceSlice> history;
  int64_t history_rows = 0;
  for (const Sequence& s : sequences) {
    history.push_back({history_rows, s.start_pos + s.n_tokens, 0, s.blocks});
    history_rows += s.start_pos + s.n_tokens;
  }
  const std::vector<float> k = random_values(static_cast<size_t>(kv_dim * history_rows), 91, -1.5f, 1.5f);
  // A latent cache's values are its keys (store_kv ignores v; the reference reads the keys).
  const std::vector<float> v = latent ? k : random_values(static_cast<size_t>(kv_dim * history_rows), 92);
  const BackendTensor kd = upload_f32(backend, {kv_dim, history_rows, 1, 1}, k);
  const BackendTensor vd = upload_f32(backend, {kv_dim, history_rows, 1, 1}, v);
  backend.store_kv(kd.view, vd.view, history, cache.layer);

  // Then the batch's queries.
  std::vector<SequenceSlice> batch;
  int64_t tokens = 0;
  for (const Sequence& s : sequences) {
    batch.push_back({tokens, s.n_tokens, s.start_pos, s.blocks});
    batch.back().key_ends = key_ends[batch.size() - 1];
    tokens += s.n_tokens;
  }
  const std::vector<float> q = random_values(static_cast<size_t>(head_dim * heads * tokens), 93, -1.5f, 1.5f);
  const BackendTensor qd = upload_f32(backend, {head_dim, heads, tokens, 1}, q);
  BackendTensor out = allocate(backend, DType::F32, {value_dim, heads, tokens, 1});
  backend.attention(qd.view, cache.layer, batch, config, out.view);

  // The reference attends over the cache's contents, dequantized (stored_rows): a compressed
  // cache's own error is not the kernel's, only how it reads it.
  const std::vector<float> ks = stored_rows(c.type, k, kv_dim), vs = stored_rows(c.type, v, kv_dim);
  std::vector<double> want, tol;
  const double f16_unit = c.type == DType::F16 ? std::ldexp(1.0, -11) : 0.0;
  for (size_t si = 0; si < sequences.size(); ++si) {
    const Sequence& s = sequences[si];
    for (int64_t i = 0; i < s.n_tokens; ++i) {
      const int64_t pos = s.start_pos + i;
      // The last key the row sees: its own position, or its span's end.
      const int64_t hi = key_ends[si].empty() ? pos : key_ends[si][static_cast<size_t>(i)] - 1;
      const int64_t lo = config.sliding_window > 0 ? std::max<int64_t>(0, pos - config.sliding_window + 1) : 0;
      for (int64_t h = 0; h < heads; ++h) {
        const float* qh = q.data() + ((batch[si].first_token + i) * heads + h) * head_dim;
        const int64_t kvh = h / (heads / kv_heads);
        // Row j of the history batch holds position j - history[si].first_token's key.
        const auto key = [&](const std::vector<float>& src, int64_t p, int64_t d) {
          return static_cast<double>(src[static_cast<size_t>((history[si].first_token + p) * kv_dim + kvh * head_dim + d)]);
        };
        std::vector<double> scores;
        double score_error = 0.0;
        for (int64_t p = lo; p <= hi; ++p) {
          double dot = 0.0, magnitude = 0.0;
          for (int64_t d = 0; d < head_dim; ++d) {
            dot += qh[d] * key(ks, p, d);
            magnitude += std::abs(qh[d] * key(ks, p, d));
          }
          double s_val = dot * config.scale;
          if (config.softcap > 0.0f) s_val = config.softcap * std::tanh(s_val / config.softcap);
          s_val -= alibi_slope(config, h) * static_cast<double>(std::abs(pos - p));
          scores.push_back(s_val);
          score_error = std::max(score_error, magnitude * config.scale * f16_unit);
        }
        // A sink joins the max and the sum as a key without a value.
        const double sink = sinks[static_cast<size_t>(h)];
        const double top = std::max(sink, *std::max_element(scores.begin(), scores.end()));
        double sum = std::exp(sink - top);
        for (double& s_val : scores) sum += (s_val = std::exp(s_val - top));
        double vmax = 0.0;
        for (int64_t d = 0; d < value_dim; ++d) {
          double acc = 0.0;
          for (int64_t p = lo; p <= hi; ++p) {
            acc += scores[static_cast<size_t>(p - lo)] / sum * key(vs, p, d);
            vmax = std::max(vmax, std::abs(key(vs, p, d)));
          }
          want.push_back(acc);
        }
        for (int64_t d = 0; d < value_dim; ++d) {
          tol.push_back(vmax * ((4.0 * score_error + 2.0 * f16_unit) + 3e-5));
        }
      }
    }
  }
  expect_close(download(backend, out.view), want, tol, "out");
}

}  // namespace lumen::backend::conformance
