#include "backend/cuda/tensor_core_prefill_plan.h"

#include <algorithm>
#include <cstdint>

namespace lumen::backend::cuda {

std::string tensor_core_prefill_refusal(const KvLayer& cache, const AttentionConfig& config) {
  if (cache.k.type != tensor::DType::F16 || cache.v.type != tensor::DType::F16) return "the cache is not f16";
  if (prefill_tile(config.head_dim).head_dim == 0) return "no tile shape for this head dim (64, 80, 128 or 256)";
  if (values_in_keys(cache) || attention_value_dim(config) != config.head_dim) return "values narrower than keys";
  if (config.alibi_max_bias != 0.0f) return "ALiBi";
  // Tiles are copied 16 bytes at a time: every row and head slice must start 16-byte aligned.
  const auto aligned = [](const TensorView& t) {
    return reinterpret_cast<uintptr_t>(t.data) % 16 == 0 && t.row_bytes % 16 == 0;
  };
  if (!aligned(cache.k) || !aligned(cache.v)) return "cache rows not 16-byte aligned";
  return "";
}

namespace {

// The tasks of `seqs` (each one vector group of one KV head), those with the most keys first, so
// the short ones fill the device's tail. block_size 0: no block tables (an encoder's rows).
PrefillPlan plan_tasks(std::span<const SequenceSlice> seqs, int64_t group, int64_t n_kv_heads, int64_t per_task,
                       int64_t block_size, bool bidirectional) {
  PrefillPlan plan;
  struct Ordered {
    int64_t last_key;
    PrefillTask task;
  };
  std::vector<Ordered> tasks;
  for (const SequenceSlice& seq : seqs) {
    if (seq.n_tokens == 0) continue;
    const auto seq_index = static_cast<int32_t>(plan.seqs.size());
    AttentionSeq record;
    record.first_token = seq.first_token;
    record.start_pos = seq.start_pos;
    record.table_offset = static_cast<int64_t>(plan.block_tables.size());
    record.n_tokens = seq.n_tokens;
    plan.seqs.push_back(record);
    if (block_size > 0) {
      const int64_t blocks = (seq.start_pos + seq.n_tokens + block_size - 1) / block_size;
      plan.block_tables.insert(plan.block_tables.end(), seq.block_table.begin(), seq.block_table.begin() + blocks);
    }
    const int64_t vectors = seq.n_tokens * group;
    for (int64_t kv_head = 0; kv_head < n_kv_heads; ++kv_head) {
      for (int64_t begin = 0; begin < vectors; begin += per_task) {
        const int64_t last_row = std::min(vectors, begin + per_task) - 1;
        const int64_t last_key = bidirectional ? seq.n_tokens - 1 : seq.start_pos + last_row / group;
        tasks.push_back({last_key, {seq_index, static_cast<int32_t>(kv_head), static_cast<int32_t>(begin), 0}});
      }
    }
  }
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const Ordered& a, const Ordered& b) { return a.last_key > b.last_key; });
  plan.tasks.reserve(tasks.size());
  for (const Ordered& t : tasks) plan.tasks.push_back(t.task);
  return plan;
}

}  // namespace

PrefillPlan plan_tensor_core_prefill(std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                     int64_t block_size) {
  return plan_tasks(seqs, config.n_heads / config.n_kv_heads, config.n_kv_heads,
                    prefill_tile(config.head_dim).vectors(), block_size, false);
}

PrefillPlan plan_bidirectional_tensor_core(std::span<const SequenceSlice> seqs, const AttentionConfig& config) {
  const int64_t tile = prefill_padded_head_dim(config.head_dim);
  return plan_tasks(seqs, config.n_heads / config.n_kv_heads, config.n_kv_heads, prefill_tile(tile).vectors(), 0, true);
}

}  // namespace lumen::backend::cuda
