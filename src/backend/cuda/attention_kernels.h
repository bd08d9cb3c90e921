#pragma once
// Internal to the CUDA backend: paged attention as split-KV tasks.
//
// The query vectors of a call (one per token and query head) are cut into items: up to
// kItemVectors vectors of one sequence that share one KV head (a few query rows x the heads
// of a GQA group). Keys are cut at absolute positions into splits of kSplitKeys; a task is
// (item, split) and produces, for each of its vectors, a partial result over the keys of its
// split that the vector may see. A combine step then merges the splits of each vector in
// split order. Because splits and tiles are aligned to absolute positions and every vector's
// arithmetic is its own, a token's result does not depend on what else is in the batch, and
// decode (one query row) and prefill (many) run the same kernels: decode gets its parallelism
// from the splits (flash-decoding), prefill from the items.
//
// Modes:
//  - Flash: one pass, online softmax in f32 (running max, sum and accumulator per split);
//    the combine rescales the splits to the common max.
//  - Stats + ExactPv: llama.cpp's default arithmetic for an f16 V cache (see
//    backend/cpu/attention.h). Stats finds each split's max and sum of exponentials (the sum in
//    double); a combine gives each vector its row max M and inverse sum; ExactPv then
//    accumulates f16(exp(s - M) * inverse) * v over each split; the combine adds the splits.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/dtype.h"

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

struct AttentionSeq {
  int64_t first_token;   // batch row of the sequence's first query
  int64_t start_pos;     // position of that query
  int64_t table_offset;  // where its block table starts in the concatenated tables
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

// Per partial slot: the split's max score (or -inf when no key of the split was visible to the
// vector) and its sum of exponentials.
struct PartialStats {
  double sum;
  float max;
  float seen;  // 1 when any key of the split was visible (ExactPv writes only this)
};

enum class AttentionMode { Flash, Stats, ExactPv };

struct AttentionParams {
  // queries and output: row (token * n_heads + head), head_dim floats each
  const float* q = nullptr;
  int64_t q_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  int64_t n_heads = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
  float softcap = 0.0f;
  int64_t window = 0;
  // cache: K and V of the same type (a KV cache type: f32, f16, bf16, q8_0, q4_0, FP8 E4M3);
  // row = block * block_size + slot
  const void* k = nullptr;
  const void* v = nullptr;
  size_t k_row_bytes = 0;
  size_t v_row_bytes = 0;
  tensor::DType cache_type = tensor::DType::F16;
  int64_t block_size = 16;
  // the plan
  const AttentionSeq* seqs = nullptr;
  const int32_t* block_tables = nullptr;
  const AttentionItem* items = nullptr;
  const AttentionTask* tasks = nullptr;
  // partial results (per slot) and, for the exact modes, per vector (M, inverse sum)
  PartialStats* partial_stats = nullptr;
  float* partial_acc = nullptr;  // head_dim floats per slot
  float2* vector_stats = nullptr;
};

// Runs tasks [0, n_tasks) of params.tasks in `mode`.
void launch_attention_tasks(AttentionMode mode, const AttentionParams& params, int64_t n_tasks,
                            cudaStream_t stream);
// Merges the partial results of items [0, n_items) of params.items: Flash writes the output,
// Stats writes vector_stats, ExactPv writes the output.
void launch_attention_combine(AttentionMode mode, const AttentionParams& params, int64_t n_items,
                              cudaStream_t stream);

}  // namespace lumen::backend::cuda
