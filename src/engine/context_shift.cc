#include "engine/context_shift.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::engine {

namespace {

int64_t keep_blocks_of(const ContextShiftPolicy& policy, int64_t block_size) {
  return (policy.keep_tokens + block_size - 1) / block_size;
}

}  // namespace

int64_t positions_held(const ContextShiftPolicy& policy, int64_t block_size) {
  if (policy.window_tokens <= 0) return policy.max_model_len;
  // The sinks, the window, and the block being filled before the next drop.
  return keep_blocks_of(policy, block_size) * block_size + policy.window_tokens + block_size;
}

std::optional<ShiftPlan> shift_due(const ContextShiftPolicy& policy, int64_t n_computed, int64_t block_size) {
  if (!policy.enabled || n_computed < positions_held(policy, block_size)) return std::nullopt;
  const int64_t keep = keep_blocks_of(policy, block_size);
  const int64_t full = n_computed / block_size;  // only whole, computed blocks are dropped
  const int64_t movable = full - keep;
  if (movable <= 0) return std::nullopt;
  int64_t discard = 0;
  if (policy.window_tokens > 0) {
    // Down to the sinks and the window.
    const int64_t excess = n_computed - keep * block_size - policy.window_tokens;
    discard = (excess + block_size - 1) / block_size;
  } else {
    discard = movable / 2;
  }
  discard = std::clamp<int64_t>(discard, 1, movable);
  return ShiftPlan{static_cast<size_t>(keep), static_cast<size_t>(discard)};
}

bool apply_shift(Sequence& seq, const ShiftPlan& plan, int64_t block_size, std::vector<kv::BlockCopy>& copies,
                 std::vector<kv::BlockId>& moved) {
  std::optional<std::vector<kv::BlockId>> blocks = seq.blocks.shift(plan.keep_blocks, plan.discard_blocks, copies);
  if (!blocks) return false;
  moved = std::move(*blocks);
  const int64_t first = static_cast<int64_t>(plan.keep_blocks) * block_size;
  const int64_t count = static_cast<int64_t>(plan.discard_blocks) * block_size;
  if (first + count > seq.n_computed) fail("context shift: positions [{}, {}) are not all computed", first, first + count);
  seq.tokens.erase(seq.tokens.begin() + first, seq.tokens.begin() + first + count);
  seq.n_computed -= count;
  // Dropped prompt tokens shorten the prompt; dropped generated ones are still counted.
  const int64_t prompt_dropped = std::clamp<int64_t>(seq.prompt_len - first, 0, count);
  seq.prompt_len -= prompt_dropped;
  seq.n_dropped_generated += count - prompt_dropped;
  seq.next_prompt_logit = seq.prompt_len - 1;  // shifts happen in decode: nothing pending
  return true;
}

}  // namespace lumen::engine
