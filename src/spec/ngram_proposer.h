#pragma once
// Prompt lookup decoding (vLLM's "ngram" method, llama.cpp's lookup decoding): text that copies
// from its input (summaries, rewrites, extraction, code edits, RAG answers) repeats spans of the
// prompt, so the tokens that followed an earlier occurrence of the sequence's latest n tokens
// are a good guess for what follows now. No model, no state: a backward scan per sequence.
//
// The rule (vLLM's): among suffixes of length n in [min_n, max_n], the longest one that occurs
// earlier in the sequence wins, at its most recent earlier occurrence; the proposal is the
// `max_tokens` tokens that followed it there. Where those reach the end of the sequence, the
// proposal repeats them with that period (a copy that overlaps itself): a recent occurrence means
// the text is looping. No match, no proposal.
#include <cstdint>
#include <span>
#include <vector>

#include "spec/proposer.h"

namespace lumen::spec {

// The proposal for one sequence, appended to `out` (which is cleared first).
void ngram_lookup(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t max_tokens,
                  std::vector<int32_t>& out);

// Token trees: up to `max_candidates` continuations merged into a tree (spec/token_tree.h),
// appended to `tokens` and `parents` (both cleared first). The candidates are the continuations
// of every earlier occurrence of a suffix of min_n..max_n tokens, longest match first, the most
// recent first among equally long ones, so the first branch is ngram_lookup's proposal. Each is
// `max_tokens` long (repeating, as ngram_lookup's, where it reaches the end); candidates that add
// no node (a branch already there) do not count.
void ngram_tree(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t max_tokens,
                int32_t max_candidates, std::vector<int32_t>& out_tokens, std::vector<int32_t>& out_parents);

class NgramProposer final : public Proposer {
 public:
  // 1 <= min_n <= max_n (checked by the config's validation).
  NgramProposer(int32_t min_n, int32_t max_n) : min_n_(min_n), max_n_(max_n) {}
  void propose(std::span<const DraftRequest> requests) override;

 private:
  int32_t min_n_;
  int32_t max_n_;
};

}  // namespace lumen::spec
