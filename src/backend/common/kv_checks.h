#pragma once
// The paged K/V cache's layout checks and addressing, shared by every op that walks a block
// table (store_kv, attention) on every backend: row p % block_size of block
// block_table[p / block_size] holds position p of a sequence, all n_kv_heads heads side by
// side, in f16 (llama.cpp's default), f32, or a compressed type (backend::is_kv_cache_type).
#include <cstdint>
#include <span>
#include <string_view>

#include "backend/backend.h"

namespace lumen::backend::common {

// Throws lumen::Error unless the cache is laid out as KvLayer says ({kv_dim, block_size,
// n_blocks}, K and V each of a KV cache type, rows at least kv_dim wide and whole blocks) with K rows of `kv_dim` values
// and V rows of `v_dim` (-1: kv_dim too). Values that are a view of the keys (values_in_keys)
// must be K's type and fit in a K row.
void check_kv_layer(const KvLayer& cache, int64_t kv_dim, std::string_view op, int64_t v_dim = -1);

// Throws lumen::Error unless every sequence's tokens lie inside a batch of `batch_tokens`
// rows, its positions are non-negative, and its block table covers positions
// [0, start_pos + n_tokens) with block ids that exist in the cache.
void check_sequences(std::span<const SequenceSlice> seqs, int64_t batch_tokens, const KvLayer& cache,
                     std::string_view op);

// The cache row (within {block_size, n_blocks}) that holds position `pos` of `seq`.
inline int64_t kv_row(const SequenceSlice& seq, int64_t pos, int64_t block_size) {
  return static_cast<int64_t>(seq.block_table[static_cast<size_t>(pos / block_size)]) * block_size + pos % block_size;
}

}  // namespace lumen::backend::common
