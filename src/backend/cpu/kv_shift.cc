#include "backend/cpu/kv_shift.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/common/kv_checks.h"
#include "backend/cpu/hadamard.h"
#include "backend/cpu/rope.h"
#include "backend/cpu/kv_store.h"
#include "tensor/quantize.h"

namespace lumen::backend::cpu {

void shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                int64_t head_dim) {
  const int64_t row = cache.k.dims[0];
  common::check_kv_layer(cache, row, "shift_keys");
  if (head_dim <= 0 || row % head_dim != 0) fail("shift_keys: head_dim {} does not divide the K row {}", head_dim, row);
  const int64_t n_blocks = cache.k.dims[2] * cache.k.dims[3];
  for (int32_t block : blocks) {
    if (block < 0 || block >= n_blocks) fail("shift_keys: block id {} is not in [0, {})", block, n_blocks);
  }
  // Rotations compose: R(p + delta) = R(delta) R(p), for every scaling Lumen supports (the
  // angle is linear in the position). The magnitude (YaRN's, the file's attention factor) was
  // applied once when the key was stored, so the rotation here is normalized to 1.
  const common::RopeParams params = make_rope_params(config, head_dim);
  std::vector<float> cos_sin(static_cast<size_t>(params.rope_dims));
  rope_cache(params, delta, cos_sin.data());
  for (size_t i = 0; i + 1 < cos_sin.size(); i += 2) {
    const float norm = std::sqrt(cos_sin[i] * cos_sin[i] + cos_sin[i + 1] * cos_sin[i + 1]);
    cos_sin[i] /= norm;
    cos_sin[i + 1] /= norm;
  }
  // Any cache type: widen the row to f32, rotate, store it back as store_kv would (a quantized
  // row is requantized, which is what llama.cpp's K-shift does for a quantized K: cast to f32,
  // rope, copy back).
  std::vector<float> keys(static_cast<size_t>(row));
  for (int32_t block : blocks) {
    for (int64_t r = 0; r < cache.block_size; ++r) {
      auto* bytes = static_cast<uint8_t*>(cache.k.data) +
                    (static_cast<size_t>(block) * static_cast<size_t>(cache.block_size) + static_cast<size_t>(r)) *
                        cache.k.row_bytes;
      tensor::dequantize_row(cache.k.type, bytes, keys.data(), row);
      for (int64_t h = 0; h < row / head_dim; ++h) {
        float* key = keys.data() + h * head_dim;
        // A rotated cache's key: back to the rope basis, shifted, rotated again (H is its own inverse).
        if (cache.rotated) hadamard_rotate(key, head_dim);
        rope_head(params, cos_sin.data(), key);
        if (cache.rotated) hadamard_rotate(key, head_dim);
      }
      store_kv_row(keys.data(), row, cache.k.type, bytes);
    }
  }
}

}  // namespace lumen::backend::cpu
