#pragma once
// Internal to the CPU attention (attention.cc): which keys a query row of a slice may see
// beyond plain causality, or past it. A tree mask (SequenceSlice::visible) hides the slice's rows off the
// query's branch; a sliding window counts from each row's own position
// (SequenceSlice::positions: a tree node's rope position, earlier than where it sits in the
// cache), for cached keys and for the ancestors the mask shows alike.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/backend.h"
#include "backend/common/alibi.h"

namespace lumen::backend::cpu {

// Row `row` of the slice's flags over the slice's own rows, or null without a mask (causal).
inline const uint8_t* tree_row(const SequenceSlice& seq, int64_t row) {
  if (seq.visible.empty()) return nullptr;
  return seq.visible.data() + row * seq.n_tokens;
}

// The end (exclusive) of the cache positions row `row` of the slice sees: the row's own plus
// one (causal), or further for a row of a span that attends both ways (SequenceSlice::key_ends).
inline int64_t row_key_end(const SequenceSlice& seq, int64_t row) {
  return seq.key_ends.empty() ? seq.start_pos + row + 1 : seq.key_ends[static_cast<size_t>(row)];
}

// The last cache position any of rows [first, first + n) sees: where a task over them ends its tiles.
inline int64_t last_key(const SequenceSlice& seq, int64_t first, int64_t n) {
  int64_t last = seq.start_pos + first + n - 1;
  for (int64_t r = 0; r < n && !seq.key_ends.empty(); ++r) last = std::max(last, row_key_end(seq, first + r) - 1);
  return last;
}

// Row `row`'s position in the sequence, from which a sliding window counts.
inline int64_t row_position(const SequenceSlice& seq, int64_t row) {
  return seq.positions.empty() ? seq.start_pos + row : seq.positions[static_cast<size_t>(row)];
}

// The first cached position row `row` of the slice sees (0 without a window). Cached keys below
// it are out of its window; so are the slice's own rows below it, whose positions are no later
// than their cache positions.
inline int64_t window_start(const SequenceSlice& seq, int64_t row, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, row_position(seq, row) - window + 1) : 0;
}

// The lowest window_start of rows [first, first + n): where a task over them starts its tiles.
inline int64_t lowest_window_start(const SequenceSlice& seq, int64_t first, int64_t n, int64_t window) {
  if (window <= 0) return 0;
  int64_t lowest = window_start(seq, first, window);
  for (int64_t r = 1; r < n; ++r) lowest = std::min(lowest, window_start(seq, first + r, window));
  return lowest;
}

// Whether cache position `key` is hidden from query row `row` by the row's tree flags `tree`: a
// slice row off its branch, or an ancestor out of the window as the positions count it.
inline bool hidden(const SequenceSlice& seq, const uint8_t* tree, int64_t row, int64_t key, int64_t window) {
  if (tree == nullptr || key < seq.start_pos) return false;
  const int64_t k = key - seq.start_pos;
  if (tree[k] == 0) return true;
  return window > 0 && row_position(seq, row) - row_position(seq, k) >= window;
}

// The position a key at cache position `key` has for ALiBi: its own for a cached key, its row's
// (a tree node's) for a key of the slice.
inline int64_t key_position(const SequenceSlice& seq, int64_t key) {
  return key < seq.start_pos ? key : row_position(seq, key - seq.start_pos);
}

// Adds ALiBi's bias (slope times minus the distance, backend/common/alibi.h) to the scores of
// keys [first + begin, first + end) of query row `row`: s[j] is key first + j's score.
inline void add_alibi(const SequenceSlice& seq, int64_t row, float slope, int64_t first, int64_t begin, int64_t end,
                      float* s) {
  if (slope == 0.0f) return;
  const int64_t query = row_position(seq, row);
  for (int64_t j = begin; j < end; ++j) s[j] += slope * common::alibi_distance(query, key_position(seq, first + j));
}

// Query head `head`'s sink logit (AttentionConfig::sinks; the model's head index), -inf without
// sinks: it joins the softmax's max and sum as a key whose value is zero.
inline float sink_logit(const AttentionConfig& config, int64_t head) {
  return config.sinks != nullptr ? config.sinks[head] : -std::numeric_limits<float>::infinity();
}

// The online softmax's end with a sink: the factor its accumulator (the sum of exp(s - max) v)
// is multiplied by, from the row's running max and sum. Without a sink 1 / sum; with one, as
// ggml's flash attention closes a row: the sink raises the max when it is larger (the
// accumulator and sum scaled down by exp(max - sink)), and adds exp(sink - max) to the sum.
inline float online_output_scale(float max, float sum, float sink) {
  if (sink == -std::numeric_limits<float>::infinity()) return sum > 0.0f ? 1.0f / sum : 0.0f;
  if (sink > max) {
    const float down = std::exp(max - sink);  // 0 when no key was visible (max -inf)
    return down / (sum * down + 1.0f);
  }
  return 1.0f / (sum + std::exp(sink - max));
}

}  // namespace lumen::backend::cpu
