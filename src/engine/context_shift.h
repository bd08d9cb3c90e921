#pragma once
// What a sequence does when it reaches the end of its context, other than finishing: drop old
// positions and go on (llama.cpp's context shift; StreamingLLM's attention sinks). Positions
// [keep, keep + discard) are dropped in whole blocks, the later blocks move down in the block
// table (no copy of K/V), and their keys are rotated back by the dropped count so that the
// sequence's positions stay contiguous (Transformer::shift_keys). The K/V kept was computed
// with the dropped tokens in view, so a shifted sequence is an approximation of one that never
// saw them (as in llama.cpp), and its moved blocks are never published to the prefix cache.
//  - shift (llama.cpp's default answer): when the next position would pass max_model_len, half
//    of the positions after the first keep_tokens go;
//  - StreamingLLM (window_tokens > 0): the first keep_tokens positions (the attention sinks)
//    and the last window_tokens stay; the middle goes a block at a time, so memory stays flat
//    however long the generation runs.
#include <cstdint>
#include <optional>

#include "engine/sequence.h"
#include "kv/block_pool.h"

namespace lumen::engine {

struct ContextShiftPolicy {
  bool enabled = false;
  int64_t keep_tokens = 0;    // positions kept at the start (rounded up to whole blocks)
  int64_t window_tokens = 0;  // StreamingLLM's recent window; 0: shift at max_model_len
  int64_t max_model_len = 0;
};

struct ShiftPlan {
  size_t keep_blocks = 0;
  size_t discard_blocks = 0;
};

// Whether a sequence with n_computed positions, about to compute position n_computed, must
// shift first, and by how much. nullopt: no shift due, or none possible (nothing but kept
// blocks before the last, partly filled one).
std::optional<ShiftPlan> shift_due(const ContextShiftPolicy& policy, int64_t n_computed, int64_t block_size);

// The longest a sequence gets under the policy before shifting (for validation and sizing).
int64_t positions_held(const ContextShiftPolicy& policy, int64_t block_size);

// Applies the plan to the sequence's blocks (appending copy-on-write copies), its tokens and its
// counters; the blocks whose keys must be rotated by -discard * block_size go to `moved`.
// False (nothing changed) when the pool lacks the blocks for the copies.
bool apply_shift(Sequence& seq, const ShiftPlan& plan, int64_t block_size, std::vector<kv::BlockCopy>& copies,
                 std::vector<kv::BlockId>& moved);

}  // namespace lumen::engine
