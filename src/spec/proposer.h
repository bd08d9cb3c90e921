#pragma once
// Where speculative decoding's guesses come from. A proposer looks at sequences about to decode
// and proposes, for each, the tokens it expects next (its draft); the engine then scores every
// draft with the target model in the step's one forward pass and keeps what the model agrees
// with (engine/speculation.h). The proposer's output is deterministic given the sequence (a
// point-mass "q" in the rejection-sampling sense), which is what makes plain sample-and-compare
// verification lossless (engine/draft_verification.h).
//
// Batched on purpose: the n-gram proposer handles sequences one by one, but a draft-model or
// layer-skip proposer will run one forward pass over all of a step's sequences.
#include <cstdint>
#include <span>
#include <vector>

namespace lumen::spec {

struct DraftRequest {
  uint64_t sequence_id = 0;
  // The sequence so far: prompt, then output; its last token is sampled but not yet computed.
  std::span<const int32_t> tokens;
  int32_t max_tokens = 0;              // propose at most this many (> 0)
  std::vector<int32_t>* draft = nullptr;  // out: cleared, then the proposal (possibly none)
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual void propose(std::span<const DraftRequest> requests) = 0;
};

}  // namespace lumen::spec
