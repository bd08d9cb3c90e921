#pragma once
// Speculative decoding's draft-model proposer (vLLM's "draft_model"), also the layer-skip
// proposer (its model is then a view of the target's first layers: draft_proposers.h).
//
// Per step, over all sequences that may draft at once: each sequence's draft K/V is brought up to
// its tokens (DraftSequences: what no longer matches is dropped, what is missing is computed in
// chunks, the prefix cache first), the logits after its last token give the first draft token,
// and each further pass feeds every sequence's latest draft token to get the next one, until
// each has the length the engine asked for. One flat forward pass per round, all sequences
// together, on the target's backend and threads.
//
// Greedy on purpose: the draft's token is the argmax of its logits (lowest id on ties), so the
// draft is a deterministic function of the sequence, a point-mass q in the rejection-sampling
// sense, and the engine's verification (sample from the target, keep while it equals the draft)
// is lossless as it is for the n-gram proposer, whatever the request's sampling. A sampled
// draft would need its q distribution carried to the verifier, for an acceptance rate that is
// rarely better.
//
// Token trees (num_candidates = c > 1): the greedy chain is the tree's first branch, and at each
// of its depths the draft's next c - 1 likeliest tokens join as leaves beside the chain's token
// (shallow depths first). Each leaf is one more row for the target to score and wins one token
// when the target's sample at that depth is that leaf rather than the chain's token: the leaf's
// logits then give the token after it. The leaves cost no extra draft pass (every depth's logits
// are already there); growing them into branches would need draft passes of their own.
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "engine/draft_sequences.h"
#include "engine/loaded_model.h"
#include "model/transformer.h"
#include "spec/proposer.h"

namespace lumen::engine {

// What the draft runs: a model loaded from its own file, or a view of the target's layers.
// Exactly one of the two is set.
struct DraftWeights {
  std::unique_ptr<LoadedModel> file_model;
  std::unique_ptr<model::Transformer> layer_view;
  model::Transformer& transformer() const { return file_model ? *file_model->transformer : *layer_view; }
};

class DraftModelProposer final : public spec::Proposer {
 public:
  // The draft's K/V: `n_blocks` blocks of `block_size` positions on `backend`.
  DraftModelProposer(DraftWeights weights, backend::Backend& backend, int32_t n_blocks, int32_t block_size);

  void propose(std::span<const spec::DraftRequest> requests) override;
  void forget_ended(const std::function<bool(uint64_t)>& live) override { sequences_.forget_ended(live); }

  // Tests: how many sequences hold draft state.
  size_t n_sequences() const { return sequences_.size(); }

 private:
  // A sequence being drafted for in this step.
  struct Work {
    const spec::DraftRequest* request;
    DraftSequence* seq;
    int64_t logit_row = -1;  // in this pass, -1 when it reads none
    // Token trees: the leaves to add beside the chain, as (parent draft index, token), in the
    // order they were found (by depth, then likelihood).
    std::vector<std::pair<int32_t, int32_t>> leaves;
  };
  // Appends w's leaves to its draft as tree nodes (DraftRequest::draft_parents).
  static void add_leaves(const Work& w);
  // One forward pass: every unfinished work's next catch-up chunk, or its latest draft token;
  // then each one that read logits gets its next draft token. False when every work is done.
  bool run_pass();

  DraftWeights weights_;
  model::Transformer& model_;
  DraftSequences sequences_;
  int64_t vocab_;
  bool reported_failure_ = false;
  // Reused from step to step.
  std::vector<Work> work_;
  std::vector<int32_t> tokens_, positions_, logit_rows_;
  std::vector<backend::SequenceSlice> slices_;
  std::vector<float> logits_;
  std::vector<int32_t> top_;  // a row's likeliest tokens (token trees)
};

}  // namespace lumen::engine
