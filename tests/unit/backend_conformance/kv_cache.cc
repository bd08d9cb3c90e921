#include "kv_cache.h"

#include "tensor/fp16.h"

namespace lumen::backend::conformance {

BackendCache make_cache(Backend& backend, tensor::DType type, int64_t kv_dim, int64_t block_size, int64_t n_blocks) {
  BackendCache c;
  c.k = allocate(backend, type, {kv_dim, block_size, n_blocks, 1});
  c.v = allocate(backend, type, {kv_dim, block_size, n_blocks, 1});
  c.layer = KvLayer{c.k.view, c.v.view, block_size};
  return c;
}

float stored_value(tensor::DType type, float v) {
  return type == tensor::DType::F16 ? tensor::fp16_to_float(tensor::float_to_fp16(v)) : v;
}

std::vector<uint8_t> read_cache(Backend& backend, const BackendCache& cache) {
  const size_t block_bytes = kv_block_bytes(cache.layer);
  const auto n_blocks = static_cast<size_t>(cache.layer.k.dims[2]);
  std::vector<uint8_t> bytes(2 * n_blocks * block_bytes);
  for (size_t b = 0; b < n_blocks; ++b) {
    backend.read_kv_block(cache.layer, static_cast<int64_t>(b), bytes.data() + b * block_bytes,
                          bytes.data() + (n_blocks + b) * block_bytes);
  }
  return bytes;
}

}  // namespace lumen::backend::conformance
