#pragma once
// Lookahead decoding (Fu et al. 2024, "Break the Sequential Dependency of LLM Inference Using
// Lookahead Decoding"): no draft model, no reliance on the prompt containing the answer.
//
// Per sequence the proposer keeps a Jacobi window of N - 1 levels by W columns of guessed
// future tokens. Each step the window rides along the sequence's verification chunk as extra
// rows (spec::ExtraRows) in the same forward pass: level 0 is a chain right after the last
// token t (t itself stands in column 0), and the token at level j of column i (position
// t's + i + j) attends to the context, t, level 0's columns 1..i and column i's levels 1..j.
// So column i is a chain of N - 1 guesses, each the model's earlier prediction after the one
// below it; the argmax after its top (level N - 2) extends it to an n-gram of N tokens, which
// goes into the sequence's n-gram pool (spec/ngram_pool.h) keyed by its first token. Then
// every column drops its level 0 and takes the new argmax on top: one Jacobi iteration per
// step, N - 1 levels deep.
//
// The draft: the most recent pooled n-gram whose first token is t, its N - 1 tokens after t; or,
// when the engine verifies token trees (num_candidates > 1), the most recent ones up to that
// many merged into a tree (the paper's verification branch of up to G n-grams). Whatever the window holds, the draft is only a guess the engine verifies
// (engine/draft_verification.h): the output stays the output without speculation.
//
// The window starts from tokens of the sequence itself, picked pseudo-randomly (the paper's
// initialization); the first N - 2 iterations only replace those picks with the model's
// guesses, so n-grams are pooled from then on.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "spec/ngram_pool.h"
#include "spec/proposer.h"

namespace lumen::spec {

struct LookaheadShape {
  int32_t window = 4;   // W >= 1
  int32_t ngram = 4;    // N >= 3
  int32_t guesses = 4;  // G >= 1: n-grams pooled per first token
  // Rows the window adds to a step: W - 1 at level 0, W at each of the N - 2 levels above.
  int32_t extra_rows() const { return window * (ngram - 1) - 1; }
};

class LookaheadProposer final : public Proposer {
 public:
  explicit LookaheadProposer(LookaheadShape shape) : shape_(shape) {}

  void propose(std::span<const DraftRequest> requests) override;
  void observe(uint64_t sequence_id, std::span<const int32_t> outputs) override;
  void forget_ended(const std::function<bool(uint64_t)>& live) override;

  // Tests: the pool of a sequence (null when it has no state).
  const NgramPool* pool(uint64_t sequence_id) const;

 private:
  struct Sequence {
    Sequence(const LookaheadShape& shape) : pool(shape.ngram - 1, shape.guesses) {}
    // levels[j][i]: level j, column i; levels[0][0] is never used (t stands there).
    std::vector<std::vector<int32_t>> levels;
    int32_t last_token = -1;   // t of the rows last proposed
    int32_t iterations = 0;    // observed since the window was filled from the sequence
    bool awaiting = false;     // rows proposed and not observed yet
    NgramPool pool;
  };

  void fill_window(Sequence& s, uint64_t sequence_id, std::span<const int32_t> tokens) const;
  void window_rows(const Sequence& s, ExtraRows& rows) const;

  LookaheadShape shape_;
  std::unordered_map<uint64_t, Sequence> sequences_;
};

}  // namespace lumen::spec
