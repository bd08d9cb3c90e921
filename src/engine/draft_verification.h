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
#include <utility>
#include <vector>

#include "lumen/finish_reason.h"
#include "sampling/sampler.h"

namespace lumen::engine {

struct DraftOutcome {
  int64_t accepted = 0;                // draft tokens the model agreed with
  std::optional<FinishReason> finish;  // the sequence ended at the last emitted token
};

// `sample_row(size_t j)` draws from row j (of 1 + draft.size()) with the request's sampler: from
// its logits, or, for a greedy request whose rows came back as their argmax alone
// (reduced_rows.h), from that. `emit(const sampling::SampleResult&)` takes each drawn token in
// order (it must call sampler.accept, as the engine's emit does, so the next row's penalties
// count it) and returns why the sequence ends with it, if it does.
template <typename SampleRow, typename Emit>
DraftOutcome verify_draft_rows(SampleRow&& sample_row, std::span<const int32_t> draft, Emit&& emit) {
  DraftOutcome outcome;
  for (size_t j = 0; j <= draft.size(); ++j) {
    const sampling::SampleResult result = sample_row(j);
    const bool agrees = j < draft.size() && result.token == draft[j];
    if (agrees) ++outcome.accepted;
    outcome.finish = emit(result);
    if (outcome.finish || !agrees) break;
  }
  return outcome;
}

// verify_draft_rows over `rows`: 1 + draft.size() rows of `vocab` logits.
template <typename Emit>
DraftOutcome verify_draft(sampling::Sampler& sampler, sampling::SamplerWorkspace& workspace,
                          std::span<const int32_t> draft, std::span<const float> rows, size_t vocab, Emit&& emit) {
  return verify_draft_rows([&](size_t j) { return sampler.sample(rows.subspan(j * vocab, vocab), workspace); }, draft,
                           std::forward<Emit>(emit));
}

// Token trees (several candidates merged, spec/token_tree.h): node i is draft[i], following node
// parents[i] (-1: the last token t); rows[0] is after t, rows[1 + i] after node i. The same rule
// walked down the tree: draw y from the current node's row with the request's sampler and emit
// it; if a child of the node holds y, go on from that child, else stop. Since siblings hold
// different tokens, the next node is a function of the sampled token, so every emitted token is
// drawn from the plain decoder's distribution given the tokens before it: lossless for greedy
// and sampling, as for a chain (a chain is the tree whose node i follows node i - 1).
struct TreeOutcome {
  std::vector<int32_t> path;           // the accepted nodes, root first
  std::optional<FinishReason> finish;  // the sequence ended at the last emitted token
};

// verify_tree over rows that sample_row(size_t row) draws from (row 0: after t; row 1 + i:
// after node i), as verify_draft_rows.
template <typename SampleRow, typename Emit>
TreeOutcome verify_tree_rows(SampleRow&& sample_row, std::span<const int32_t> draft, std::span<const int32_t> parents,
                             Emit&& emit) {
  TreeOutcome outcome;
  int32_t node = -1;
  for (;;) {
    const sampling::SampleResult result = sample_row(static_cast<size_t>(node + 1));
    int32_t next = -1;
    for (size_t i = static_cast<size_t>(node + 1); i < draft.size(); ++i) {
      if (parents[i] == node && draft[i] == result.token) {
        next = static_cast<int32_t>(i);
        break;
      }
    }
    if (next >= 0) outcome.path.push_back(next);
    outcome.finish = emit(result);
    if (outcome.finish || next < 0) break;
    node = next;
  }
  return outcome;
}

template <typename Emit>
TreeOutcome verify_tree(sampling::Sampler& sampler, sampling::SamplerWorkspace& workspace,
                        std::span<const int32_t> draft, std::span<const int32_t> parents, std::span<const float> rows,
                        size_t vocab, Emit&& emit) {
  return verify_tree_rows([&](size_t row) { return sampler.sample(rows.subspan(row * vocab, vocab), workspace); },
                          draft, parents, std::forward<Emit>(emit));
}

}  // namespace lumen::engine
