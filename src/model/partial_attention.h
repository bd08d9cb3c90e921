#pragma once
// Ring attention's arithmetic (model/context_chunks.h): a rank's queries attend each K/V block
// as it passes, and the partial results are merged by their log-sum-exp. Softmax over a union of
// disjoint key sets is the weighted mean of the softmaxes over each set, weighted by each set's
// sum of exp(scores): exactly what merging (out, lse) pairs computes, so the blocks may come in
// any order and the result is attention over all of them (to rounding).
//
// Host f32 rows, as the CPU backend keeps activations: queries {head_dim, n_heads} per row,
// keys {head_dim, n_kv_heads} and values {value_dim, n_kv_heads} per key row; outputs {value_dim,
// n_heads} per row and one lse per row and head. Query head h reads KV head h / (n_heads /
// n_kv_heads) (grouped-query attention). Masks come from positions: a row sees the keys at or
// before its own position, and within the sliding window when the config has one.
#include <cstdint>
#include <span>

#include "backend/backend_types.h"

namespace lumen::model {

struct AttentionRows {
  std::span<const float> data;
  std::span<const int32_t> positions;  // one per row, ascending
};

// out and lse of `queries` over the keys of one block. A row that sees none of the block's keys
// gets lse = -infinity and zero output (it adds nothing when merged). Throws lumen::Error for
// sizes that do not match the config or positions that do not ascend.
void partial_attention(const AttentionRows& queries, const AttentionRows& keys, std::span<const float> values,
                       const backend::AttentionConfig& config, std::span<float> out, std::span<float> lse);

// (out, lse) becomes the merge of itself and (part_out, part_lse): both over disjoint key sets of
// the same queries (value_dim values per row and head).
void merge_partial_attention(std::span<float> out, std::span<float> lse, std::span<const float> part_out,
                             std::span<const float> part_lse, int64_t value_dim);

}  // namespace lumen::model
