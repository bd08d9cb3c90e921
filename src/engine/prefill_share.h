#pragma once
// How one step's prefill budget (max_num_batched_tokens less the decodes) is shared between the
// prompts waiting for it: running sequences still in prefill and waiting ones that could be
// admitted.
//
// Before, the first prompt in rank order took the whole budget until its prefill ended: a
// 3000-token prompt made every request behind it wait for all of it (11.5 s on SmolLM2-135M on
// two cores) before its first token. The rule now:
//   - the first prompt in rank order (the oldest under FCFS, the most urgent under priorities)
//     gets at least half the budget, or all it needs if less: however many prompts arrive after
//     it, it progresses at half speed at least (never starved);
//   - the rest goes to the prompts with the fewest tokens left, shortest first, ties in rank
//     order (shortest-remaining-first), each taking all it needs while budget remains.
// A prompt of at most half the budget that arrives during a long prefill is therefore computed
// in the next step and samples its first token there. Prompts of equal length run in rank order
// as before (the one begun has fewer tokens left), so a single prompt, or a batch of equal ones,
// is scheduled exactly as first-come first-served scheduled it; the grants never sum to more
// than the budget.
#include <cstdint>
#include <span>
#include <vector>

namespace lumen::engine {

// `needs[i]`: tokens the i-th prompt in rank order has left to compute (> 0). Returns each one's
// grant for this step, in the same order.
std::vector<int64_t> share_prefill_budget(std::span<const int64_t> needs, int64_t budget);

}  // namespace lumen::engine
