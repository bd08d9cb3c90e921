#pragma once
// A paged K/V cache on a backend for the KV and attention checks, and the reference's copy of
// what it should hold.
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {

struct BackendCache {
  BackendTensor k, v;
  KvLayer layer;
};

// Zero-filled K and V of `type`, {kv_dim, block_size, n_blocks}.
BackendCache make_cache(Backend& backend, tensor::DType type, int64_t kv_dim, int64_t block_size, int64_t n_blocks);

// The bytes store_kv must write for one row of n values, written out here from the formats'
// definitions rather than taken from the tensor module: f32 copied; f16 and bf16 rounded to
// nearest even; q8_0 and q4_0 by ggml's reference formulas (quantize_row_q8_0_ref /
// quantize_row_q4_0_ref, which llama.cpp's CPU backend uses for a -ctk q8_0 cache); FP8 E4M3
// the nearest code by search over all 256 (ties to the even code), saturating at +-448.
void encode_row(tensor::DType type, const float* src, int64_t n, uint8_t* dst);

// What the cache holds, as floats, after store_kv of `values` (rows of `row` values): each row
// encoded as above, then dequantized. The attention reference computes on these.
std::vector<float> stored_rows(tensor::DType type, const std::vector<float>& values, int64_t row);

// The whole cache (K, then V), read block by block with read_kv_block: raw bytes.
std::vector<uint8_t> read_cache(Backend& backend, const BackendCache& cache);

}  // namespace lumen::backend::conformance
