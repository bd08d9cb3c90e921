#pragma once
// Host side of the CUDA attention: cuts a call's query vectors into items and (item, split)
// tasks (attention_layout.h, attention_kernels.h), and groups items into ranges whose partial results fit a
// bounded scratch buffer.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/attention_layout.h"

namespace lumen::backend::cuda {

struct AttentionPlan {
  std::vector<AttentionSeq> seqs;
  std::vector<int32_t> block_tables;  // each sequence's blocks, concatenated
  std::vector<uint8_t> masks;         // token trees' flags, concatenated (AttentionSeq::mask_offset)
  std::vector<int32_t> positions;     // token trees' row positions, concatenated
  std::vector<int32_t> key_ends;      // spans' row key ends, concatenated (AttentionSeq::key_ends_offset)
  std::vector<AttentionItem> items;   // in range order; partial_base relative to the range
  std::vector<AttentionTask> tasks;   // in item order
  struct Range {
    int64_t item_begin, item_end;
    int64_t task_begin, task_end;
    int64_t slots;  // partial slots the range needs
  };
  std::vector<Range> ranges;
  int64_t max_range_slots = 0;
  int64_t vectors = 0;  // query vectors in all (the exact modes' per-vector stats)
};

// Sequences and config must have been checked (common::check_sequences and the config checks).
// A range holds at most max_slots partial slots, unless one item alone needs more.
AttentionPlan plan_attention(std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                             int64_t block_size, int64_t max_slots);

// Everything an attention call's host plans depend on, flattened: a call whose key equals the
// last call's reuses that call's uploaded plan (the split-KV plan above, and the tensor-core
// prefill's tasks, whose size per task follows the head dim).
std::vector<int64_t> attention_plan_key(std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                        int64_t block_size);

}  // namespace lumen::backend::cuda
