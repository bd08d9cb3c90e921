#pragma once
// ITL-aware scheduling (EngineConfig::max_itl_ms): while sequences decode, the step's predicted
// time (step_time_model.h) stays under a target, and prefill chunks (and speculative drafts)
// shrink to what fits beside the decodes. The idea is Sarathi-Serve's stall-free batching, with
// the token budget derived each step from a time target and measured step costs instead of
// being fixed, so it follows the model, the machine and the batch.
//
// The rules, for one step's plan:
//  - decodes are never cut: they are what the target protects. If the decodes alone exceed the
//    target, scheduling cannot meet it (fewer sequences, --max-num-seqs, can);
//  - a step without a decoding stream has no time limit: no stream waits on it, and the
//    prompt's time to first token is what counts;
//  - the floor: a step with decodes still grants min_prefill_tokens prefill tokens in total even
//    past the target, so a prompt always progresses: a running prompt of L tokens finishes its
//    prefill within ceil(L / min_prefill_tokens) steps (admission order and the token budget
//    otherwise unchanged);
//  - until the model has seen enough steps to price a prefill token (StepTimeModel::ready),
//    prefill gets only the floor beside decodes;
//  - speculative drafts (which cost step time like decodes) get only what is left under the
//    target, no floor: they are an optimization, never owed (before the model is ready they
//    are left to speculation's own adaptive length).
// Preemption, priorities and admission order are the scheduler's as before; this only bounds
// how many tokens each prefill chunk and draft gets.
#include <cstdint>

#include "engine/sequence.h"
#include "engine/step_time_model.h"

namespace lumen::engine {

class StepTimeBudget {
 public:
  // max_step_seconds > 0; min_prefill_tokens > 0.
  StepTimeBudget(const StepTimeModel& model, double max_step_seconds, int64_t min_prefill_tokens);

  // Before planning a step.
  void start();
  // A chunk was planned: n_tokens of `seq` from its n_computed (not advanced yet), n_sampled of
  // them sampled.
  void add(const Sequence& seq, int64_t n_tokens, int64_t n_sampled);
  // How many of the next `wanted` (<= seq.uncomputed()) prompt tokens of `seq` this step may
  // compute; 0 when none.
  int64_t prefill_room(const Sequence& seq, int64_t wanted) const;
  // How many of `wanted` draft tokens may follow the `chunk_tokens` rows already planned for the
  // decoding `seq` (each is a sampled row).
  int64_t draft_room(const Sequence& seq, int64_t chunk_tokens, int64_t wanted) const;
  // n draft tokens were appended after the chunk's `chunk_tokens` rows.
  void add_draft(const Sequence& seq, int64_t chunk_tokens, int64_t n);

  const StepShape& shape() const { return shape_; }
  double max_step_seconds() const { return max_step_seconds_; }
  int64_t min_prefill_tokens() const { return min_prefill_tokens_; }
  // A stream whose next token this step computes: what the target protects.
  static bool is_live_decode(const Sequence& seq) { return seq.decoding() && seq.n_generated() > 0; }

 private:
  const StepTimeModel& model_;
  double max_step_seconds_;
  int64_t min_prefill_tokens_;
  StepShape shape_;
  int64_t live_decodes_ = 0;
};

}  // namespace lumen::engine
