#pragma once
// What a draft token costs on this machine, learned from the engine's own step times: the
// relative cost of one more row in a single-sequence decode step (seconds per draft token over
// the seconds of a step without one). It differs by an order of magnitude between machines
// (2 cores: the extra rows' compute shows; many cores or a GPU: nearly free) and moves with the
// machine's other load, so it is measured rather than configured.
//
// The fit: step seconds = base + slope * draft tokens, by least squares over exponentially
// forgotten samples (each new sample weighs as much as the last ~50 together), from steps that
// decode exactly one sequence and prefill nothing (batch 1, where speculation matters most; a
// bigger batch uses the same ratio, which overstates its cost and so errs towards shorter
// drafts). Until the steps seen hold two different draft lengths the cost is unknown: 0.
#include <cstdint>

namespace lumen::spec {

class StepCost {
 public:
  static constexpr double kForget = 0.98;

  void record(int64_t draft_tokens, double seconds);
  // Seconds per draft token over the seconds of a plain step, >= 0 (0 while unknown).
  double per_draft_token() const { return cost_; }
  // Whether the steps seen so far measured it (they held two different numbers of rows).
  bool known() const { return known_; }

 private:
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
  double cost_ = 0;
  bool known_ = false;
};

}  // namespace lumen::spec
