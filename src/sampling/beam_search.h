#pragma once
// Beam search over a model's log-probabilities: the bookkeeping only. Whoever owns the model
// (the engine, or a test's synthetic model) computes the next-token logits of every live beam,
// hands them to step(), and learns which beams continue with which token; it forks, extends and
// frees the beams' KV blocks accordingly. Nothing here touches the model or the KV cache.
//
// Definitions (documented to users through SamplingParams):
//  - a beam's log-probability is the sum over its generated tokens of log_softmax(logits)[token],
//    the logits as the model gives them (temperature 1, no filters, bias or penalties), except
//    that end tokens get -inf while fewer than min_tokens tokens were generated;
//  - a hypothesis ends with an end token (end-of-generation unless ignore_eos, or a stop token
//    id; the end token is part of it) or when it reaches max_tokens;
//  - its score is sum_logprob / length^length_penalty, length = its generated tokens, end token
//    included. Results are ranked by score (ties: the one found first);
//  - each round, every live beam proposes its 2 x width most likely tokens; the proposals are
//    ranked by the beam's sum plus the token's log-probability (ties: lower beam, then lower
//    token id) and taken in that order: an end token finishes a hypothesis, any other token
//    makes a new beam (finished instead, if it reaches max_tokens), until width beams are made;
//  - early_stopping = true: stop as soon as `width` hypotheses have finished;
//    early_stopping = false: stop when no live beam can still reach a better score than the
//    width-th best finished one. That test uses a true upper bound (log-probabilities are <= 0,
//    so a beam's sum can only fall, and the length that helps it most is its current one or
//    max_tokens), so with enough width the result is the exhaustive search's.
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/candidate.h"
#include "sampling/stopping.h"

namespace lumen::sampling {

struct BeamSearchConfig {
  int32_t width = 1;            // beams kept each round, >= 1
  int32_t n_results = 1;        // hypotheses returned, in [1, width]
  float length_penalty = 1.0f;  // finite
  bool early_stopping = false;
  int64_t max_tokens = 16;      // >= 1
  int64_t min_tokens = 0;       // end tokens are banned before this many tokens
  std::vector<int32_t> end_tokens;
};

struct BeamToken {
  int32_t token;
  float logprob;
};

struct BeamHypothesis {
  std::vector<BeamToken> tokens;  // generated tokens, the end token included
  double sum_logprob = 0.0;
  double score = 0.0;
  FinishReason finish = FinishReason::Length;  // Stop: ended with an end token
};

class BeamSearch {
 public:
  // A new beam: `parent` indexes the live beams before step(), `token` was appended to it.
  struct Extension {
    size_t parent;
    int32_t token;
  };

  // Throws lumen::Error for an invalid configuration. Starts with one live, empty beam.
  explicit BeamSearch(BeamSearchConfig config);

  size_t n_live() const { return live_.size(); }
  // The tokens live beam `beam` generated so far.
  const std::vector<BeamToken>& live_tokens(size_t beam) const { return live_[beam].tokens; }
  double live_sum_logprob(size_t beam) const { return live_[beam].sum_logprob; }

  // One round. logits[i]: the next-token logits of live beam i (all the same vocabulary).
  // Returns the new live beams, in order: new beam j continues old beam extensions[j].parent
  // with extensions[j].token. A parent may have several children or none (it is then dropped).
  // Throws lumen::Error when called after done() or with the wrong number of rows.
  const std::vector<Extension>& step(std::span<const std::span<const float>> logits);

  bool done() const;
  // Ends the search now: every live beam becomes a hypothesis that ended at its length
  // (FinishReason::Length), as when the KV cache cannot hold it any longer.
  void stop();
  // The best n_results finished hypotheses, best first (fewer only if fewer finished). Call
  // when done(): then no live beam could be better.
  std::vector<BeamHypothesis> results() const;

  static double score(double sum_logprob, size_t length, float length_penalty);

 private:
  struct Beam {
    std::vector<BeamToken> tokens;
    double sum_logprob = 0.0;
  };
  struct Proposal {
    double sum;
    size_t parent;
    int32_t token;
    float logprob;
  };
  bool is_end(int32_t token) const;
  // Appends live beam `parent`'s proposals (its 2 x width most likely tokens) to proposals_.
  void propose(size_t parent, std::span<const float> logits);
  void finish(const Beam& parent, int32_t token, float logprob, FinishReason reason);
  void keep(BeamHypothesis h);  // into finished_, if among the best `width`
  // Best possible score of a live beam, over every way it could still end.
  double upper_bound(const Beam& beam) const;

  BeamSearchConfig config_;
  std::vector<Beam> live_;
  std::vector<BeamHypothesis> finished_;  // the best `width` so far, best first
  std::vector<Proposal> proposals_;
  std::vector<Extension> extensions_;
  std::vector<float> masked_;           // a row with end tokens banned (before min_tokens)
  std::vector<Candidate> top_scratch_;
};

}  // namespace lumen::sampling
