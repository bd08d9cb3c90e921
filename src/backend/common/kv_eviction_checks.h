#pragma once
// The argument checks of importance-based KV eviction's ops (Backend::attention_scores,
// gather_kv_rows), in front of every backend, so each accepts and refuses the same calls with the
// same words before reading or writing anything. Each throws lumen::Error.
#include <cstdint>
#include <span>

#include "backend/backend_types.h"

namespace lumen::backend::common {

// Scores are read from an f16 or f32 key cache that is not rotated, for causal rows without
// ALiBi (no token tree, no span attending both ways), over a block table that covers every slot.
void check_attention_scores(const KvLayer& cache, const SequenceSlice& seq, const AttentionConfig& config);

// keep holds n_keep slots per KV head (n_kv_heads = the key rows' width / head_dim), each a slot
// of src_table's blocks; dst_table holds n_keep slots; every block is one of the cache's; not a
// latent cache (values a view of the keys). Returns n_keep.
int64_t check_gather_kv_rows(const KvLayer& cache, std::span<const int32_t> src_table,
                             std::span<const int32_t> dst_table, std::span<const int32_t> keep, int64_t head_dim);

}  // namespace lumen::backend::common
