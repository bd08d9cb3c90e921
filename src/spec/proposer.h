#pragma once
// Where speculative decoding's guesses come from. A proposer looks at sequences about to decode
// and proposes, for each, the tokens it expects next (its draft); the engine then scores every
// draft with the target model in the step's one forward pass and keeps what the model agrees
// with (engine/speculation.h). The proposer's output is deterministic given the sequence (a
// point-mass "q" in the rejection-sampling sense), which is what makes plain sample-and-compare
// verification lossless (engine/draft_verification.h).
//
// Batched on purpose: the n-gram proposer handles sequences one by one, but a draft-model or
// layer-skip proposer runs one forward pass over all of a step's sequences
// (engine/draft_model_proposer.h).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace lumen::spec {

// Rows a proposer adds to a sequence's chunk after its draft, for its own use (lookahead
// decoding's Jacobi window): computed in the same forward pass, never accepted, their K/V
// dropped after the step. Each row extends one earlier row: it attends to the sequence's
// context, its last token and the chain of rows it extends (a tree attention mask), not to the
// draft or to other branches. Rows come in order (a row's parent precedes it); the last
// `n_logits` rows get logits, whose argmaxes go back to the proposer (Proposer::observe).
struct ExtraRows {
  std::vector<int32_t> tokens;
  std::vector<int32_t> depth;   // its position minus the last token's (>= 1)
  std::vector<int32_t> parent;  // the row it extends, or -1: the sequence's last token
  int32_t n_logits = 0;
  size_t size() const { return tokens.size(); }
  bool empty() const { return tokens.empty(); }
  void clear() {
    tokens.clear();
    depth.clear();
    parent.clear();
    n_logits = 0;
  }
};

struct DraftRequest {
  uint64_t sequence_id = 0;
  // The sequence so far: prompt, then output; its last token is sampled but not yet computed.
  std::span<const int32_t> tokens;
  int32_t max_tokens = 0;              // propose at most this many (> 0)
  std::vector<int32_t>* draft = nullptr;  // out: cleared, then the proposal (possibly none)
  // The sequence's prefix-cache salt: a proposer that caches per-prefix state (a draft model's
  // K/V) shares it only between sequences of the same salt, as the engine's own cache does.
  uint64_t cache_salt = 0;
  // Out, for a proposer with rows of its own (lookahead): cleared, then its rows; null for a
  // proposer without.
  ExtraRows* extra = nullptr;
  // Out, token-tree drafts: cleared; left empty the draft is a chain, else one entry per draft
  // token, the draft token it follows (-1: the sequence's last token). A parent precedes its
  // children, siblings hold different tokens, no branch is deeper than max_tokens, and the
  // first branch is draft[0, k) (the likeliest, verified without moving K/V when accepted).
  // Null where the engine wants a chain.
  std::vector<int32_t>* draft_parents = nullptr;
  // How many candidate continuations a tree may merge (1: a chain).
  int32_t max_candidates = 1;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual void propose(std::span<const DraftRequest> requests) = 0;
  // Called before every step: a proposer that keeps state per sequence (a draft model's K/V)
  // lets go of the sequences for which `live` is false (finished, aborted).
  virtual void forget_ended(const std::function<bool(uint64_t sequence_id)>& live) { (void)live; }
  // After a step that computed the extra rows the proposer asked for (ExtraRows): the argmax
  // token of each of their rows with logits, in order. Not called when the rows were not
  // scheduled (no room) or the sequence ended.
  virtual void observe(uint64_t sequence_id, std::span<const int32_t> outputs) {
    (void)sequence_id;
    (void)outputs;
  }
};

}  // namespace lumen::spec
