#include "backend/common/kv_eviction_checks.h"

#include "util/error.h"

namespace lumen::backend::common {

void check_attention_scores(const KvLayer& cache, const SequenceSlice& seq, const AttentionConfig& config) {
  // Scores are for choosing what to keep, not for the output: f32 and f16 keys (the default
  // cache) are enough, and a rotated (quantized) cache would need its own reading.
  if ((cache.k.type != tensor::DType::F32 && cache.k.type != tensor::DType::F16) || cache.rotated) {
    fail("importance-based KV eviction needs an f16 or f32 KV cache (not {})", tensor::dtype_info(cache.k.type).name);
  }
  if (!seq.visible.empty()) fail("importance-based KV eviction does not score token-tree rows");
  if (!seq.key_ends.empty()) fail("importance-based KV eviction does not score rows of spans that attend both ways");
  if (config.alibi_max_bias != 0.0f) fail("importance-based KV eviction does not score ALiBi models");
  if (config.sinks != nullptr) fail("importance-based KV eviction does not score models with attention sinks");
  if (static_cast<int64_t>(seq.block_table.size()) * cache.block_size < seq.start_pos + seq.n_tokens) {
    fail("attention_scores: the block table is short");
  }
}

int64_t check_gather_kv_rows(const KvLayer& cache, std::span<const int32_t> src_table,
                             std::span<const int32_t> dst_table, std::span<const int32_t> keep, int64_t head_dim) {
  if (values_in_keys(cache)) fail("importance-based KV eviction is not supported for multi-head latent attention");
  const int64_t bs = cache.block_size, n_blocks = cache.k.dims[2];
  const int64_t n_kv_heads = head_dim > 0 ? cache.k.dims[0] / head_dim : 0;
  if (n_kv_heads <= 0 || keep.size() % static_cast<size_t>(n_kv_heads) != 0) {
    fail("gather_kv_rows: {} kept slots for {} KV heads", keep.size(), n_kv_heads);
  }
  const auto n_keep = static_cast<int64_t>(keep.size()) / n_kv_heads;
  if (static_cast<int64_t>(dst_table.size()) * bs < n_keep) {
    fail("gather_kv_rows: {} slots in {} blocks", n_keep, dst_table.size());
  }
  for (int32_t s : keep) {
    if (s < 0 || static_cast<int64_t>(s) >= static_cast<int64_t>(src_table.size()) * bs) {
      fail("gather_kv_rows: slot {} out of range", s);
    }
  }
  for (auto table : {src_table, dst_table}) {
    for (int32_t b : table) {
      if (b < 0 || b >= n_blocks) fail("gather_kv_rows: block {} is not in [0, {})", b, n_blocks);
    }
  }
  return n_keep;
}

}  // namespace lumen::backend::common
