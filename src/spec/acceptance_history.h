#pragma once
// Per sequence: whether its drafts have been paying off lately, so a sequence whose text does not
// copy from its context stops paying for drafts the model rejects.
//
// The rule: an exponential average of the accepted share of each draft (weight 0.3 on the
// newest, starting at 1: a new sequence is trusted). When it falls below the configured minimum,
// the sequence pauses for 4 decode steps, then drafts again once: if that probe lifts the
// average back over the minimum it goes on as before, otherwise the next pause doubles (up to
// 64 steps). A sequence in a pause decodes as without speculation.
//
// Apart from that, for the draft's length (spec/draft_length.h): the probability that a draft
// token is accepted given the ones before it were, as accepted tokens over examined ones (the
// accepted plus the first rejected), both forgotten by kTokenForget per draft. It starts at 1
// (two drafted-and-accepted tokens' worth of trust), so a new sequence drafts at full length.
#include <cstdint>

namespace lumen::spec {

class AcceptanceHistory {
 public:
  static constexpr double kWeight = 0.3;
  static constexpr int32_t kFirstPause = 4;
  static constexpr int32_t kLongestPause = 64;
  static constexpr double kTokenForget = 0.8;

  // Once per decode step of the sequence: whether this step may carry a draft (a paused
  // sequence counts the step towards the end of its pause).
  bool ready();
  // A chain of `drafted` tokens (> 0) of which the model accepted the first `accepted`.
  void record(int64_t drafted, int64_t accepted, double min_rate) {
    record(drafted, accepted, accepted < drafted, min_rate);
  }
  // Any draft, a token tree included: its longest branch is `depth` tokens (> 0; a chain's
  // length), the model accepted `accepted` tokens along one branch, and `rejected_next` says
  // whether a draft token after them was examined and refused (a chain: accepted < depth; a
  // tree: the last accepted node has children). A tree's shares count depths, not nodes, so a
  // tree whose best branch is taken whole counts as fully accepted however many candidates it
  // held: its other nodes are what a tree costs, not misses of the drafter.
  void record(int64_t depth, int64_t accepted, bool rejected_next, double min_rate);
  double rate() const { return rate_; }
  double token_acceptance() const { return accepted_ / examined_; }
  bool paused() const { return pause_ > 0; }

 private:
  double rate_ = 1.0;
  double accepted_ = 2.0;
  double examined_ = 2.0;
  int32_t pause_ = 0;
  int32_t next_pause_ = kFirstPause;
};

}  // namespace lumen::spec
