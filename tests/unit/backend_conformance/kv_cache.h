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

// What a cache row holds after store_kv of `v`: v itself (F32) or v rounded to f16.
float stored_value(tensor::DType type, float v);

// The whole cache (K, then V), read block by block with read_kv_block: raw bytes.
std::vector<uint8_t> read_cache(Backend& backend, const BackendCache& cache);

}  // namespace lumen::backend::conformance
