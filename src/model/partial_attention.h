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
//
// The work is the CPU backend's attention tiles (backend/cpu/attention_tiles.h: its SIMD dot
// products, exponentials and weighted sums) in tasks of (rows, KV head) on its thread pool: the
// query heads that share a KV head go through each key tile together, so every K/V row is read
// once per task, not once per query head. Key tiles every row of a task sees skip the mask, and
// keys no row sees are never visited.
#include <cstdint>
#include <span>

#include "backend/backend_types.h"

namespace lumen {
class ThreadPool;
}
namespace lumen::backend::cpu {
struct AttentionTileKernels;
}

namespace lumen::model {

struct AttentionRows {
  std::span<const float> data;
  std::span<const int32_t> positions;  // one per row, ascending
};

// A block's K and V rows as the KV cache holds them when it is f16 (ring attention sends them
// so: widening f16 to f32 is exact, so the block's keys are the cache's keys).
struct F16KvRows {
  std::span<const uint16_t> keys, values;
  std::span<const int32_t> positions;  // one per key row, ascending
};

// Where the work runs: the defaults are the best tiles this CPU has, on the calling thread.
struct PartialAttentionRun {
  const backend::cpu::AttentionTileKernels* tiles = nullptr;
  ThreadPool* pool = nullptr;
};

// out and lse of `queries` over the keys of one block. A row that sees none of the block's keys
// gets lse = -infinity and zero output (it adds nothing when merged). Throws lumen::Error for
// sizes that do not match the config or positions that do not ascend.
void partial_attention(const AttentionRows& queries, const AttentionRows& keys, std::span<const float> values,
                       const backend::AttentionConfig& config, std::span<float> out, std::span<float> lse,
                       const PartialAttentionRun& run = {});
void partial_attention(const AttentionRows& queries, const F16KvRows& block, const backend::AttentionConfig& config,
                       std::span<float> out, std::span<float> lse, const PartialAttentionRun& run = {});

// (out, lse) becomes the merge of itself and (part_out, part_lse): both over disjoint key sets of
// the same queries (value_dim values per row and head).
void merge_partial_attention(std::span<float> out, std::span<float> lse, std::span<const float> part_out,
                             std::span<const float> part_lse, int64_t value_dim);

}  // namespace lumen::model
