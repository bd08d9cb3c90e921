#pragma once
// Internal to the CUDA backend: decode attention without a host plan. When every sequence of an
// attention call has one query row (a decode step), the call's items (attention_layout.h) form a
// fixed grid, sequence x KV head x part of the GQA group, in plan_attention's order, and an
// item's splits follow from its sequence's position alone. The kernels derive each item from
// their block index and the position they read from device memory (decode_item), so a launch
// depends only on the number of sequences and a bound on the splits (the grid's second
// dimension; blocks past an item's last split return at once). One launch then serves every
// decode step of that shape, as a replayed CUDA graph needs (step_graphs.h).
//
// decode_item gives the items plan_attention gives, so both paths do the same arithmetic on the
// same keys and agree bit for bit (tests/unit/cuda_host/decode_attention_test.cc). Only the
// partial results' layout differs: every item owns max_splits x heads_per_item slots.
#include <cstdint>

#include "backend/cuda/attention_layout.h"
#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda {

struct DecodeShape {
  int32_t n_seqs = 0;  // 0: the call runs an explicit plan (AttentionParams' items, tasks)
  int32_t n_kv_heads = 0;
  int32_t group = 0;       // query heads per KV head
  int32_t max_splits = 0;  // splits per item the launch covers: at least every item's n_splits
};

// Query heads per item: a whole GQA group when it fits in an item.
LUMEN_HD int32_t decode_heads_per_item(const DecodeShape& s) { return s.group < kItemVectors ? s.group : kItemVectors; }

// Items per KV head (one unless the group is wider than an item), and per sequence.
LUMEN_HD int32_t decode_parts_per_group(const DecodeShape& s) {
  const int32_t per_item = decode_heads_per_item(s);
  return (s.group + per_item - 1) / per_item;
}
LUMEN_HD int64_t decode_items_per_seq(const DecodeShape& s) {
  return static_cast<int64_t>(s.n_kv_heads) * decode_parts_per_group(s);
}
LUMEN_HD int64_t decode_items(const DecodeShape& s) { return s.n_seqs * decode_items_per_seq(s); }

// Partial slots the launch writes (PartialStats and head_dim floats each).
LUMEN_HD int64_t decode_partial_slots(const DecodeShape& s) {
  return decode_items(s) * s.max_splits * decode_heads_per_item(s);
}

// Item `index` of a decode call, whose sequence (index / decode_items_per_seq) has its query at
// `position`; window: the layer's sliding window (0: none). As plan_attention: the splits run
// from the one holding the lowest key the query sees to the one holding the query.
LUMEN_HD AttentionItem decode_item(const DecodeShape& s, int64_t index, int64_t position, int64_t window) {
  const int64_t per_seq = decode_items_per_seq(s);
  const int32_t parts = decode_parts_per_group(s);
  const int32_t per_item = decode_heads_per_item(s);
  const int64_t seq = index / per_seq;
  const auto within = static_cast<int32_t>(index % per_seq);
  const int32_t kv = within / parts;
  const int32_t head_in_group = (within % parts) * per_item;
  const int64_t from_window = position - window + 1;
  const int64_t lowest = window > 0 && from_window > 0 ? from_window : 0;
  AttentionItem item{};
  item.seq = static_cast<int32_t>(seq);
  item.q_begin = 0;
  item.n_q = 1;
  item.head_begin = kv * s.group + head_in_group;
  item.n_heads = s.group - head_in_group < per_item ? s.group - head_in_group : per_item;
  item.kv_head = kv;
  item.first_split = static_cast<int32_t>(lowest / kSplitKeys);
  item.n_splits = static_cast<int32_t>(position / kSplitKeys) - item.first_split + 1;
  item.partial_base = index * s.max_splits * per_item;
  item.stats_base = seq * s.n_kv_heads * s.group + item.head_begin;
  return item;
}

// The split bound a decode step whose latest query is at `max_position` launches with: a power of
// two of at least 8, so the positions of many consecutive steps share one launch shape (and one
// recorded graph) at the cost of at most half the blocks returning at once.
inline int32_t decode_split_bound(int64_t max_position) {
  const int64_t needed = max_position / kSplitKeys + 1;
  int64_t bound = 8;
  while (bound < needed) bound *= 2;
  return static_cast<int32_t>(bound);
}

}  // namespace lumen::backend::cuda
