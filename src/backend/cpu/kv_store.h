#pragma once
// Writing a batch's new keys and values into the paged K/V cache, and moving whole blocks. The
// cache holds f16 (llama.cpp's default), f32 or compressed rows (backend::is_kv_cache_type):
// row p % block_size of block
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

// One row of n values converted to the cache's type: f16 and bf16 round to nearest even, q8_0
// and q4_0 are quantized exactly as ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref (what
// llama.cpp's CPU backend writes into a -ctk q8_0 cache), FP8 E4M3 saturates (tensor/fp8.h).
void store_kv_row(const float* src, int64_t n, tensor::DType type, void* dst);

// Copies (converting to the cache's type with store_kv_row) row
// first_token + i of k and v to position start_pos + i of each sequence. k and v are f32,
// {kv_dim, n_tokens}.
void store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
              KvLayer& cache);

// Whole-block moves (copy-on-write, swap out / in). Blocks are contiguous rows in both K and V,
// so each is one memcpy per tensor; ids are checked against the cache.
void copy_kv_block(KvLayer& cache, int64_t src, int64_t dst);
// One row (block * block_size + slot) of K and V copied over another.
void copy_kv_row(KvLayer& cache, int64_t src, int64_t dst);
void read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v);
void write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v);

}  // namespace lumen::backend::cpu
