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
// Break-even, measured rather than configured (issue 49): a speculating step also yields
// tokens (1 + accepted) for rows it adds to the forward pass (its draft and a proposer's own
// rows, such as lookahead's window), each row costing `cost_per_row` plain steps on this machine
// (spec/step_cost.h learns it from the engine's step times). Both are averaged like the rate;
// when tokens < 1 + cost_per_row x rows the sequence's speculation yields fewer tokens per
// second than plain decoding would, and it pauses exactly as for a low acceptance rate (its
// probes measure again). With the cost not known yet (0) every step pays.
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
  void record(int64_t depth, int64_t accepted, bool rejected_next, double min_rate) {
    record(depth, accepted, rejected_next, 0, min_rate, 0.0);
  }
  // The same with the step's cost: `rows` it added to the forward pass (the draft's and a
  // proposer's own; depth 0: it carried only the proposer's rows), each costing `cost_per_row`
  // plain steps (0: unknown). Pauses when the rate is below min_rate or the step's yield, on
  // average, is below the break-even.
  void record(int64_t depth, int64_t accepted, bool rejected_next, int64_t rows, double min_rate, double cost_per_row);
  double rate() const { return rate_; }
  double token_acceptance() const { return accepted_ / examined_; }
  bool paused() const { return pause_ > 0; }
  // Whether the last recorded step left the average yield below the break-even.
  bool below_break_even() const { return below_break_even_; }

 private:
  double rate_ = 1.0;
  double accepted_ = 2.0;
  double examined_ = 2.0;
  int32_t pause_ = 0;
  int32_t next_pause_ = kFirstPause;
  // Break-even: averaged tokens per speculating step and rows it added (unset before the first).
  bool have_yield_ = false;
  double tokens_ = 0.0;
  double rows_ = 0.0;
  bool below_break_even_ = false;
};

}  // namespace lumen::spec
