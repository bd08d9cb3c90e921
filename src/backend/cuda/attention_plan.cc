#include "backend/cuda/attention_plan.h"

#include <algorithm>

namespace lumen::backend::cuda {

AttentionPlan plan_attention(std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                             int64_t block_size, int64_t max_slots) {
  AttentionPlan plan;
  const int64_t group = config.n_heads / config.n_kv_heads;
  // An item is up to kItemVectors vectors: a whole GQA group for as many query rows as fit,
  // or, for groups larger than that, parts of the group for one query row.
  const int64_t heads_per_item = std::min<int64_t>(group, kItemVectors);
  const int64_t rows_per_item = group <= kItemVectors ? kItemVectors / group : 1;

  AttentionPlan::Range range{0, 0, 0, 0, 0};
  const auto close_range = [&] {
    range.item_end = static_cast<int64_t>(plan.items.size());
    range.task_end = static_cast<int64_t>(plan.tasks.size());
    if (range.item_end > range.item_begin) {
      plan.ranges.push_back(range);
      plan.max_range_slots = std::max(plan.max_range_slots, range.slots);
    }
    range = {range.item_end, range.item_end, range.task_end, range.task_end, 0};
  };

  for (const SequenceSlice& seq : seqs) {
    if (seq.n_tokens == 0) continue;
    const auto seq_index = static_cast<int32_t>(plan.seqs.size());
    const int64_t end_pos = seq.start_pos + seq.n_tokens;
    const int64_t blocks = (end_pos + block_size - 1) / block_size;
    AttentionSeq record;
    record.first_token = seq.first_token;
    record.start_pos = seq.start_pos;
    record.table_offset = static_cast<int64_t>(plan.block_tables.size());
    record.n_tokens = seq.n_tokens;
    if (!seq.visible.empty()) {
      record.mask_offset = static_cast<int64_t>(plan.masks.size());
      plan.masks.insert(plan.masks.end(), seq.visible.begin(), seq.visible.end());
    }
    if (!seq.positions.empty()) {
      record.positions_offset = static_cast<int64_t>(plan.positions.size());
      plan.positions.insert(plan.positions.end(), seq.positions.begin(), seq.positions.end());
    }
    if (!seq.key_ends.empty()) {
      record.key_ends_offset = static_cast<int64_t>(plan.key_ends.size());
      plan.key_ends.insert(plan.key_ends.end(), seq.key_ends.begin(), seq.key_ends.end());
    }
    plan.seqs.push_back(record);
    plan.block_tables.insert(plan.block_tables.end(), seq.block_table.begin(),
                             seq.block_table.begin() + blocks);
    // A row's window counts back from its own position: a tree node's is earlier than its slot.
    const auto row_position = [&seq](int64_t row) {
      return seq.positions.empty() ? seq.start_pos + row
                                   : static_cast<int64_t>(seq.positions[static_cast<size_t>(row)]);
    };

    for (int64_t q_begin = 0; q_begin < seq.n_tokens; q_begin += rows_per_item) {
      const int64_t n_q = std::min(rows_per_item, seq.n_tokens - q_begin);
      // The last key any row of the item sees: the last row's position, or a span's end.
      int64_t last_pos = seq.start_pos + q_begin + n_q - 1;
      for (int64_t r = q_begin; r < q_begin + n_q && !seq.key_ends.empty(); ++r) {
        last_pos = std::max<int64_t>(last_pos, seq.key_ends[static_cast<size_t>(r)] - 1);
      }
      int64_t lowest = 0;
      if (config.sliding_window > 0) {
        lowest = last_pos;
        for (int64_t r = q_begin; r < q_begin + n_q; ++r) {
          lowest = std::min(lowest, std::max<int64_t>(0, row_position(r) - config.sliding_window + 1));
        }
      }
      const int64_t first_split = lowest / kSplitKeys;
      const int64_t n_splits = last_pos / kSplitKeys - first_split + 1;
      for (int64_t kv = 0; kv < config.n_kv_heads; ++kv) {
        for (int64_t h = 0; h < group; h += heads_per_item) {
          const int64_t n_heads = std::min(heads_per_item, group - h);
          const int64_t slots = n_splits * n_q * n_heads;
          if (range.slots > 0 && range.slots + slots > max_slots) close_range();
          AttentionItem item{};
          item.seq = seq_index;
          item.q_begin = static_cast<int32_t>(q_begin);
          item.n_q = static_cast<int32_t>(n_q);
          item.head_begin = static_cast<int32_t>(kv * group + h);
          item.n_heads = static_cast<int32_t>(n_heads);
          item.kv_head = static_cast<int32_t>(kv);
          item.first_split = static_cast<int32_t>(first_split);
          item.n_splits = static_cast<int32_t>(n_splits);
          item.partial_base = range.slots;
          item.stats_base = plan.vectors;
          const auto item_index = static_cast<int32_t>(plan.items.size());
          plan.items.push_back(item);
          for (int64_t s = 0; s < n_splits; ++s) {
            plan.tasks.push_back({item_index, static_cast<int32_t>(first_split + s)});
          }
          range.slots += slots;
          plan.vectors += n_q * n_heads;
        }
      }
    }
  }
  close_range();
  return plan;
}

std::vector<int64_t> attention_plan_key(std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                        int64_t block_size) {
  // The value width sizes the split-KV plan's ranges (their partial results' bytes); the head dim
  // the prefill tasks (prefill_tile: 64 query vectors a task, 32 at 256 dims).
  std::vector<int64_t> key = {config.n_heads,
                              config.n_kv_heads,
                              config.sliding_window,
                              block_size,
                              static_cast<int64_t>(seqs.size()),
                              attention_value_dim(config),
                              config.head_dim};
  for (const SequenceSlice& seq : seqs) {
    const int64_t blocks = (seq.start_pos + seq.n_tokens + block_size - 1) / block_size;
    key.insert(key.end(), {seq.first_token, seq.n_tokens, seq.start_pos, blocks});
    key.insert(key.end(), seq.block_table.begin(), seq.block_table.begin() + blocks);
    // A token tree's flags and positions, each behind its length (0 for a causal slice).
    key.push_back(static_cast<int64_t>(seq.visible.size()));
    key.insert(key.end(), seq.visible.begin(), seq.visible.end());
    key.push_back(static_cast<int64_t>(seq.positions.size()));
    key.insert(key.end(), seq.positions.begin(), seq.positions.end());
    key.push_back(static_cast<int64_t>(seq.key_ends.size()));  // spans that attend both ways
    key.insert(key.end(), seq.key_ends.begin(), seq.key_ends.end());
  }
  return key;
}

}  // namespace lumen::backend::cuda
