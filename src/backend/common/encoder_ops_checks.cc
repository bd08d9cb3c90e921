#include "backend/common/encoder_ops_checks.h"

#include <algorithm>
#include <vector>

#include "backend/common/op_checks.h"
#include "util/error.h"

namespace lumen::backend::common {

void check_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out) {
  check_f32(x, x.dims[0], "layer_norm", "x");
  check_f32(weight, x.dims[0], "layer_norm", "weight");
  check_f32(bias, x.dims[0], "layer_norm", "bias");
  if (weight.rows() != 1 || bias.rows() != 1) fail("layer_norm: weight and bias must be one row each");
  check_same_shape(x, out, "layer_norm");
}

void check_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                   std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                   const TensorView& out) {
  constexpr std::string_view op = "bidirectional_attention";
  if (config.n_heads <= 0 || config.n_kv_heads <= 0 || config.head_dim <= 0 ||
      config.n_heads % config.n_kv_heads != 0) {
    fail("{}: {} query heads, {} KV heads of {} values do not make groups of query heads per KV head", op,
         config.n_heads, config.n_kv_heads, config.head_dim);
  }
  if (config.sliding_window != 0 || config.softcap != 0.0f || config.alibi_max_bias != 0.0f ||
      config.sinks != nullptr || attention_value_dim(config) != config.head_dim) {
    fail("{}: takes heads and a scale only (no sliding window, softcap, ALiBi, sinks or narrower values)", op);
  }
  check_f32(q, config.n_heads * config.head_dim, op, "q");
  check_f32(k, config.n_kv_heads * config.head_dim, op, "k");
  check_f32(v, config.n_kv_heads * config.head_dim, op, "v");
  check_same_shape(k, v, op);
  check_same_shape(q, out, op);
  if (k.rows() != q.rows()) fail("{}: q has {} rows, k and v {}", op, q.rows(), k.rows());
  for (const TensorView* input : {&q, &k, &v}) {
    if (rows_overlap(*input, out)) fail("{}: out may not overlap q, k or v", op);
  }
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const SequenceSlice& seq : seqs) {
    if (seq.first_token < 0 || seq.n_tokens < 0 || seq.first_token + seq.n_tokens > q.rows()) {
      fail("{}: a sequence's rows [{}, {}) lie outside the batch of {}", op, seq.first_token,
           seq.first_token + seq.n_tokens, q.rows());
    }
    if (!seq.visible.empty() || !seq.key_ends.empty()) fail("{}: takes no tree mask or span ends", op);
    if (seq.n_tokens > 0) ranges.emplace_back(seq.first_token, seq.first_token + seq.n_tokens);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) fail("{}: two sequences share row {}", op, ranges[i].first);
  }
}

}  // namespace lumen::backend::common
