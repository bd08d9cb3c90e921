#pragma once
// Internal to the CUDA backend: the attention's work layout (attention_kernels.h describes the
// kernels): its constants and the records of a plan (attention_plan.h), in plain C++ so that
// host code and host tests (tests/unit/cuda_host) use them without CUDA's headers.
#include <cstdint>

namespace lumen::backend::cuda {

// Keys per split (a multiple of kTileKeys). A decode step's parallelism is KV heads x splits and
// its latency one task's tiles: 256-key splits gave a 1B model (8 KV heads) 24 blocks of 8 tiles
// at 600 keys on a 132-SM H200; 64 gives 80 blocks of 2. It must not depend on the batch (a
// token's result would then depend on its neighbours), so it is one constant; prefill pays with
// more partial results to combine.
inline constexpr int kSplitKeys = 64;
inline constexpr int kTileKeys = 32;    // keys per shared-memory tile: one per lane
inline constexpr int kItemVectors = 8;  // query vectors per item (4 warps x 2)
inline constexpr int kMaxHeadDim = 256;
// Multi-head latent attention (values a view of the keys' rows, so no V tile in shared memory):
// DeepSeek's latent rows of 512 + 64 values.
inline constexpr int kMaxLatentHeadDim = 576;
// ALiBi's slopes travel in the kernels' parameters, one per query head.
inline constexpr int kMaxAlibiHeads = 128;

struct AttentionSeq {
  int64_t first_token = 0;   // batch row of the sequence's first query
  int64_t start_pos = 0;     // position of that query
  int64_t table_offset = 0;  // where its block table starts in the concatenated tables
  // A token tree (SequenceSlice::visible, positions): where its n_tokens x n_tokens flags start in
  // the plan's masks and its rows' positions in the plan's positions; -1 for a causal slice.
  int64_t mask_offset = -1;
  int64_t positions_offset = -1;
  // Spans that attend both ways (SequenceSlice::key_ends): where its rows' key ends start in the
  // plan's key_ends; -1 for a causal slice (a row sees up to its own position).
  int64_t key_ends_offset = -1;
  int64_t n_tokens = 0;
};

struct AttentionItem {
  int32_t seq;
  int32_t q_begin;     // first query row within the sequence
  int32_t n_q;         // query rows
  int32_t head_begin;  // first query head; heads [head_begin, head_begin + n_heads)
  int32_t n_heads;
  int32_t kv_head;
  int32_t first_split;
  int32_t n_splits;
  // Partial slot of (split first_split + s, vector v) is partial_base + s * vectors + v, with
  // vectors = n_q * n_heads and vector v = query row v / n_heads, head v % n_heads.
  int64_t partial_base;
  int64_t stats_base;  // Stats/ExactPv: this item's first vector in the per-vector stats
};

struct AttentionTask {
  int32_t item;
  int32_t split;  // absolute split index
};

}  // namespace lumen::backend::cuda
