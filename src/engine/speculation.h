#pragma once
// Speculative decoding inside the serving engine. Each step:
//  1. before the step is planned, propose(): every running, decoding sequence that may speculate
//     gets a draft from the proposer (spec/proposer.h), the others none;
//  2. the scheduler appends what fits of each draft to the sequence's decode chunk
//     (Scheduler::append_drafts), so one forward pass computes the real last token and the
//     draft tokens together, with a row of logits after each;
//  3. the output processor verifies the draft against those rows (draft_verification.cc) and
//     the scheduler keeps the accepted tokens' K/V and rolls back the rest
//     (Scheduler::accept_draft); record() counts the outcome.
//
// Who may speculate (adaptive, so speculation never costs much where it cannot pay):
//  - no one in a step that starts with more than disable_by_batch_size running sequences: a big
//    batch keeps the machine busy, and extra rows would only slow every sequence in it;
//  - a sequence sampling or best-of (not beam search), past its first token (its siblings have
//    forked), not paused by its acceptance history (spec/acceptance_history.h): a sequence
//    whose drafts are accepted too rarely, or whose speculating steps yield fewer tokens per
//    second than plain decoding (the break-even, measured from the step times), pauses;
//  - a draft is as long as pays for this sequence (spec/draft_length.h): from its draft tokens'
//    acceptance so far and what a draft token has cost in recent steps (spec/step_cost.h);
//  - a draft never reaches past the context (max_model_len) or past the tokens max_tokens still
//    allows (all of a draft accepted yields one token more than the draft).
//
// Jump-forward (structured output, EngineConfig::jump_forward): a sequence whose grammar forces
// its next text gets that text's tokens as its draft instead, in every step whatever the batch
// size and without the acceptance-based length: the model nearly always agrees (the grammar
// allows little else), so each forced token costs a row of an existing pass, not a pass.
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/request_group.h"
#include "lumen/engine_config.h"
#include "spec/proposer.h"
#include "spec/step_cost.h"

namespace lumen::engine {

struct SpeculationCounters {
  uint64_t drafts = 0;           // sequence-steps that carried a draft
  uint64_t draft_tokens = 0;     // draft tokens scored by the model
  uint64_t accepted_tokens = 0;  // draft tokens the model agreed with
  // Token trees: accepted tokens off the tree's first branch (what the other candidates won).
  uint64_t branch_tokens = 0;
  // Sequence-steps decoded without speculating because the sequence's drafts did not pay: an
  // acceptance below min_acceptance_rate, or a yield below the measured break-even.
  uint64_t paused_steps = 0;
};

class Speculation {
 public:
  // `config` resolved (spec::resolved); `proposer` null when speculation is off. `tokenizer`
  // tokenizes forced text when `jump_forward`.
  Speculation(const SpeculativeConfig& config, std::unique_ptr<spec::Proposer> proposer, bool jump_forward,
              const tokenizer::Tokenizer& tokenizer);

  bool enabled() const { return proposer_ != nullptr || jump_forward_; }
  // Tests: another proposer (a deterministic one with known drafts).
  void set_proposer(std::unique_ptr<spec::Proposer> proposer) { proposer_ = std::move(proposer); }

  // Sets Sequence::draft of every live sequence for the step about to be planned.
  void propose(const std::unordered_map<uint64_t, Completion*>& live, int64_t n_running, int64_t max_model_len);
  // A verified chain: `drafted` tokens scored, the first `accepted` agreed with; `extra_rows`:
  // the proposer's own rows the step also computed (lookahead's window), part of its cost.
  void record(Sequence& seq, int64_t drafted, int64_t accepted, int64_t extra_rows = 0);
  // A step that carried only the proposer's own rows (no draft): what they cost, for nothing.
  void record_rows_only(Sequence& seq, int64_t extra_rows);
  // A verified token tree of `nodes` nodes (all scored), its longest branch `depth` deep:
  // `accepted` tokens along one branch, `off_first_branch` of them off the first, and whether the
  // last accepted node had children (a deeper draft token examined and refused). The counters
  // count nodes; the sequence's history counts depths (spec/acceptance_history.h).
  void record_tree(Sequence& seq, int64_t nodes, int64_t depth, int64_t accepted, int64_t off_first_branch,
                   bool rejected_next, int64_t extra_rows = 0);
  // The logits of the extra rows the proposer asked for (rows of `vocab`): their argmaxes go
  // back to it (lookahead's Jacobi iteration).
  void observe(const Sequence& seq, std::span<const float> rows, size_t vocab);
  // The forward pass of a step that decoded one sequence (and prefilled nothing) carrying
  // `rows` rows beyond its own (draft tokens and the proposer's own rows) took `seconds`.
  void record_step(int64_t rows, double seconds) { step_cost_.record(rows, seconds); }

  const SpeculationCounters& counters() const { return counters_; }

 private:
  // What a row costs, for the break-even; 0 (every step pays) while unknown, and with
  // min_acceptance_rate 0, which asks for speculation that never pauses.
  double break_even_cost() const { return config_.min_acceptance_rate > 0 ? step_cost_.per_draft_token() : 0.0; }
  // The longest draft `c` may carry this step (0: none).
  int64_t draft_room(const Completion& c, int64_t max_model_len) const;
  // The most tokens a jump-forward draft may hold for `c` (0: none).
  static int64_t forced_room(const Completion& c, int64_t max_model_len);
  // Jump-forward: sets c's draft to the tokens of the text its grammar forces; false when it
  // forces none.
  bool propose_forced(Completion& c, int64_t max_model_len) const;

  SpeculativeConfig config_;
  std::unique_ptr<spec::Proposer> proposer_;
  bool jump_forward_;
  const tokenizer::Tokenizer& tokenizer_;
  std::vector<spec::DraftRequest> requests_;  // reused from step to step
  std::vector<int32_t> outputs_;              // observe()'s argmaxes, reused
  SpeculationCounters counters_;
  spec::StepCost step_cost_;
  // Steps proposed for while the cost of a row is unknown: every kExploreEvery-th of them
  // drafts nothing, so the step times hold plain steps to measure against (a proposer that
  // always drafts the same length would otherwise never let the cost, and so the break-even,
  // be known).
  static constexpr uint64_t kExploreEvery = 4;
  uint64_t unknown_cost_steps_ = 0;
};

}  // namespace lumen::engine
