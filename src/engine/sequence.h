#pragma once
// One request as the scheduler sees it: its tokens (prompt, then what it generated), how many of
// them already have K/V in the cache, and the blocks that hold it. The scheduler moves it between
// waiting and running; nothing here touches tensor memory.
#include <cstdint>
#include <vector>

#include "kv/sequence_blocks.h"

namespace lumen::engine {

enum class SequenceState { Waiting, Running, Finished };

struct Sequence {
  Sequence(uint64_t request_id, std::vector<int32_t> prompt, int rank_priority,
           uint64_t arrival_order, kv::BlockPool& pool, uint64_t cache_salt)
      : id(request_id),
        priority(rank_priority),
        arrival(arrival_order),
        tokens(std::move(prompt)),
        prompt_len(static_cast<int64_t>(tokens.size())),
        blocks(pool, cache_salt) {}

  uint64_t id;
  int priority;      // larger runs first (priority policy); ignored under FCFS
  uint64_t arrival;  // submission order: ties in priority, and FCFS, go by it
  std::vector<int32_t> tokens;  // prompt followed by the generated tokens
  int64_t prompt_len;
  int64_t n_computed = 0;       // tokens[0, n_computed) have K/V in `blocks`
  kv::SequenceBlocks blocks;
  SequenceState state = SequenceState::Waiting;
  bool prefix_checked = false;  // the prefix cache was consulted since it last held no blocks
  bool scheduled_now = false;   // has a chunk in the step being planned
  int64_t n_preemptions = 0;
  // While swapped out: the host slots holding its first blocks (K/V of tokens[0, n_computed)).
  std::vector<int32_t> swap_slots;

  // Tokens still to be computed before the next sample: the prompt (or, after a preemption,
  // everything so far) during prefill, the last sampled token during decode.
  int64_t uncomputed() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
  bool decoding() const { return uncomputed() == 1 && n_computed > 0; }
  int64_t n_generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
};

}  // namespace lumen::engine
