#pragma once
// Writing a batch's new keys and values into the paged K/V cache, and moving whole blocks. The
// cache holds f16 (llama.cpp's default) or f32 rows: row p % block_size of block
// block_table[p / block_size] holds position p of a sequence, all n_kv_heads heads side by side.
#include <cstdint>
#include <span>
#include <string_view>

#include "backend/backend.h"
#include "backend/common/kv_checks.h"

namespace lumen::backend::cpu {

// The layout checks and addressing every backend shares (backend/common/kv_checks.h).
using common::check_kv_layer;
using common::check_sequences;
using common::kv_row;

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
