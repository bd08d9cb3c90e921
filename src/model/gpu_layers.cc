#include "model/gpu_layers.h"

#include <charconv>

#include "model/kv_cache.h"
#include "util/error.h"

namespace lumen::model {

uint64_t first_gpu_layer(uint64_t n_layers, int64_t n_gpu_layers) {
  if (n_gpu_layers < 1 || static_cast<uint64_t>(n_gpu_layers) > n_layers + 1) {
    fail(
        "--n-gpu-layers {}: this model has {} layers and an output layer, so 0 to {} of them can go to the GPU "
        "(or auto)",
        n_gpu_layers, n_layers, n_layers + 1);
  }
  return n_layers + 1 - static_cast<uint64_t>(n_gpu_layers);
}

GpuLayerBytes gpu_layer_bytes(const gguf::GgufFile& file, const HParams& hp, int64_t context_tokens,
                              tensor::DType kv_type) {
  GpuLayerBytes bytes;
  bytes.layer_weights.assign(hp.block_count, 0);
  const bool tied = file.find_tensor("output.weight") == nullptr;
  for (const gguf::TensorInfo& info : file.tensors()) {
    if (info.name.starts_with("blk.")) {
      uint64_t layer = 0;
      const char* digits = info.name.data() + 4;
      const auto [end, ec] = std::from_chars(digits, info.name.data() + info.name.size(), layer);
      if (ec == std::errc{} && *end == '.' && layer < hp.block_count) bytes.layer_weights[layer] += info.bytes;
    } else if (info.name == "output_norm.weight" || info.name == "output.weight" ||
               (tied && info.name == "token_embd.weight")) {
      bytes.output_weights += info.bytes;
    }
  }
  if (hp.block_count > 0 && context_tokens > 0) {
    // One position's K/V in every layer, spread evenly: every layer has the same rows.
    const size_t per_position = KvCache::bytes_per_block(hp, 1, kv_type) / hp.block_count;
    bytes.kv_per_layer = per_position * static_cast<uint64_t>(context_tokens);
  }
  return bytes;
}

int64_t auto_gpu_layers(uint64_t budget_bytes, uint64_t reserve_bytes, const GpuLayerBytes& bytes) {
  if (budget_bytes <= reserve_bytes) return 0;
  uint64_t room = budget_bytes - reserve_bytes;
  if (bytes.output_weights > room) return 0;
  room -= bytes.output_weights;
  int64_t units = 1;  // the output head
  for (size_t i = bytes.layer_weights.size(); i-- > 0;) {
    const uint64_t layer = bytes.layer_weights[i] + bytes.kv_per_layer;
    if (layer > room) break;
    room -= layer;
    ++units;
  }
  return units;
}

}  // namespace lumen::model
