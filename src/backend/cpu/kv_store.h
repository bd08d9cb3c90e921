#pragma once
// Writing a batch's new keys and values into the paged K/V cache, and the checks every op that
// walks a block table shares. The cache holds f16 (llama.cpp's default) or f32 rows: row
// p % block_size of block block_table[p / block_size] holds position p of a sequence, all
// n_kv_heads heads side by side.
#include <cstdint>
#include <span>
#include <string_view>

#include "backend/backend.h"

namespace lumen::backend::cpu {

// Throws lumen::Error unless the cache is laid out as KvLayer says ({kv_dim, block_size,
// n_blocks}, K and V each F16 or F32, rows at least kv_dim wide) with kv_dim == `kv_dim`.
void check_kv_layer(const KvLayer& cache, int64_t kv_dim, std::string_view op);

// Throws lumen::Error unless every sequence's tokens lie inside a batch of `batch_tokens`
// rows, its positions are non-negative, and its block table covers positions
// [0, start_pos + n_tokens) with block ids that exist in the cache.
void check_sequences(std::span<const SequenceSlice> seqs, int64_t batch_tokens,
                     const KvLayer& cache, std::string_view op);

// The cache row (within {block_size, n_blocks}) that holds position `pos` of `seq`.
inline int64_t kv_row(const SequenceSlice& seq, int64_t pos, int64_t block_size) {
  return static_cast<int64_t>(seq.block_table[static_cast<size_t>(pos / block_size)]) * block_size +
         pos % block_size;
}

// Copies (converting f32 -> f16 with round-to-nearest-even where the cache is f16) row
// first_token + i of k and v to position start_pos + i of each sequence. k and v are f32,
// {kv_dim, n_tokens}.
void store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
              KvLayer& cache);

// Whole-block moves (copy-on-write, swap out / in). Blocks are contiguous rows in both K and V,
// so each is one memcpy per tensor; ids are checked against the cache.
void copy_kv_block(KvLayer& cache, int64_t src, int64_t dst);
void read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v);
void write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v);

}  // namespace lumen::backend::cpu
