#pragma once
// Importance-based KV eviction on the CPU (engine/kv_importance.h): the attention weights a
// sequence's chosen query rows give each cached slot (Backend::attention_scores), and the
// per-head compaction of the slots it keeps (Backend::gather_kv_rows).
#include <cstdint>
#include <span>

#include "backend/backend.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {

// On an f16 V cache (the default) the scores are the attention's own probabilities, rounded to
// f16 as its P V uses them (attention_scored_with's, bit for bit, from an attention run into a
// throwaway output); on an f32 one a separate pass of f32 q.k and softmax over the keys.
void attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                      const AttentionConfig& config, float* scores, int64_t slot_stride, ThreadPool& pool);

// attention_scores through a given table of attention tile kernels (attention_scores takes the
// best one for this CPU): tests run every instruction-set level against one reference. The
// result does not depend on the pool's size, bit for bit.
struct AttentionTileKernels;
void attention_scores_with(const AttentionTileKernels& tiles, const TensorView& q, const KvLayer& cache,
                           const SequenceSlice& seq, int64_t first_row, const AttentionConfig& config, float* scores,
                           int64_t slot_stride, ThreadPool& pool);

void gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                    std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim);

}  // namespace lumen::backend::cpu
