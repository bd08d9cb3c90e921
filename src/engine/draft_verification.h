#pragma once
// Speculative decoding's verification: which of a draft's tokens the target model keeps, and
// the token it adds after them.
//
// The rule, for a chunk that computed the sequence's last token t followed by draft tokens
// d_0 .. d_{k-1}, with logit rows r_0 .. r_k (r_j predicts the token after d_{j-1}, r_0 the one
// after t): for j = 0, 1, ...: draw y_j from r_j with the request's own sampler, exactly as
// decoding without speculation would (every processor of the chain, penalties and min_tokens
// counting the tokens accepted so far, the same seeded generator), and emit it; if y_j == d_j
// go on to row j + 1, else stop. Every emitted token is one the plain decoder would have drawn
// from the same context, so:
//  - greedy: the output is token for token the output without speculation;
//  - sampling: this is Leviathan et al.'s rejection sampling for a deterministic proposer (q puts
//    all its mass on d_j): d_j is accepted with probability p(d_j) = min(1, p/q), and on
//    rejection y_j is distributed as p without d_j, renormalized, which is norm(max(0, p - q));
//    when all k are accepted, y_k is the bonus token drawn from r_k. The generator draws once per
//    emitted token, as without speculation, so a seeded request even yields the same tokens.
// Log-probabilities are the target's (the sampler's, per row). A token that ends the sequence
// (stop token, stop string, max_tokens, the context) ends the run wherever it falls in it.
#include <cstdint>
#include <optional>
#include <span>

#include "lumen/finish_reason.h"
#include "sampling/sampler.h"

namespace lumen::engine {

struct DraftOutcome {
  int64_t accepted = 0;                // draft tokens the model agreed with
  std::optional<FinishReason> finish;  // the sequence ended at the last emitted token
};

// `rows` holds 1 + draft.size() rows of `vocab` logits. `emit(const sampling::SampleResult&)`
// takes each drawn token in order (it must call sampler.accept, as the engine's emit does, so
// the next row's penalties count it) and returns why the sequence ends with it, if it does.
template <typename Emit>
DraftOutcome verify_draft(sampling::Sampler& sampler, sampling::SamplerWorkspace& workspace,
                          std::span<const int32_t> draft, std::span<const float> rows, size_t vocab, Emit&& emit) {
  DraftOutcome outcome;
  for (size_t j = 0; j <= draft.size(); ++j) {
    const sampling::SampleResult result = sampler.sample(rows.subspan(j * vocab, vocab), workspace);
    const bool agrees = j < draft.size() && result.token == draft[j];
    if (agrees) ++outcome.accepted;
    outcome.finish = emit(result);
    if (outcome.finish || !agrees) break;
  }
  return outcome;
}

}  // namespace lumen::engine
