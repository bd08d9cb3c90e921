#pragma once
// Internal to the CUDA backend: the launchers of kv_eviction.cu (importance-based KV eviction;
// the arithmetic is kv_eviction_math.h's). Pointers are device pointers.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend/cuda/kv_eviction_math.h"

namespace lumen::backend::cuda {

// Rows [row0, row0 + n_rows) of the slice, every query head: each row's probabilities over
// slots [0, n_slots) (0 outside the slots it sees) into probs, (row - row0) * n_heads + head
// rows of n_slots floats.
void launch_kv_score_rows(const KvScoreArgs& args, int64_t row0, int64_t n_rows, int64_t n_slots, float* probs,
                          cudaStream_t stream);
// table[slot * n_kv_heads + kv_head] += the probabilities of those rows and of the KV head's
// query heads, rows in order, then heads in order.
void launch_kv_score_sum(const float* probs, int64_t n_rows, int64_t n_heads, int64_t n_kv_heads, int64_t n_slots,
                         float* table, cudaStream_t stream);
// Every kept slice (n_items of them) copied into `kept`, then from there to its destination: all
// read before any is written, as a destination block may be a source (compaction in place).
void launch_kv_gather(const KvGatherArgs& args, int64_t n_items, uint8_t* cache, uint8_t* kept, cudaStream_t stream);

}  // namespace lumen::backend::cuda
