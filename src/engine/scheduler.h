#pragma once
// Iteration-level scheduling (continuous batching). Each step it decides which sequences run and
// how many of their tokens, under a token budget and a sequence limit:
//   1. under the priority policy, a waiting request may preempt running ones of lower priority;
//   2. running sequences that decode (one token each) go first, so inter-token latency stays
//      flat while prompts arrive; then running sequences still in prefill get chunks;
//   3. waiting sequences are admitted while budget, sequence slots and blocks remain (above a
//      watermark, so admission does not immediately force preemptions; with nothing running
//      there is nothing to preempt, and the whole pool is open: a request whose first chunk
//      needs every block would otherwise wait for blocks that never come), reusing the longest
//      cached prefix of their tokens;
//   4. when a running sequence cannot get a block, the lowest-ranked running sequence not yet
//      scheduled this step is preempted (or the sequence itself, when it is the lowest);
//   5. speculative decoding: decoding sequences with a draft (Sequence::draft) get it appended
//      to their chunk, with what is left of the token budget and of the free blocks above the
//      watermark. Drafts come last so they never displace a decode, a prefill chunk or an
//      admission, and never cause a preemption.
// With a step time target (limit_step_time; EngineConfig::max_itl_ms), prefill chunks and
// drafts beside decodes are further cut to what a cost model of the step predicts fits under
// it (step_time_budget.h has the rules: a floor keeps prompts progressing).
// A long prompt is cut into chunks that share a step with decodes (chunked prefill). A request
// that will fork (n > 1, best_of, beams) takes its `seats` in max_num_seqs at admission; a
// running sequence with nothing to compute (a beam waiting for its siblings) is not scheduled.
// Between clients (Sequence::client; one client unless the caller says): seats are shared
// (client_seats.h: a client beyond its share of max_num_seqs waits while another client waits,
// and its excess is preempted for a request the other client is entitled to), and so is each
// step's prefill budget (prefill_share.h: the oldest prompt at least half, the rest shortest
// first), so a short request neither waits for a flood of another client's sequences nor for a
// long prompt's whole prefill.
// Preemption frees the victim's blocks and requeues it at its rank: it later recomputes its
// tokens (prompt and generated so far), mostly from the prefix cache when that is on, or, with
// a swap space, its blocks are copied to host memory first and copied back on readmission.
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/client_seats.h"
#include "engine/context_shift.h"
#include "engine/sequence.h"
#include "engine/step_time_budget.h"
#include "engine/step_time_model.h"
#include "engine/state_snapshots.h"
#include "engine/swap_space.h"
#include "kv/block_pool.h"
#include "kv/state_slots.h"
#include "lumen/engine_config.h"

namespace lumen::engine {


struct SchedulerConfig {
  int64_t max_num_seqs = 64;
  int64_t max_num_batched_tokens = 512;
  SchedulingPolicy policy = SchedulingPolicy::Fcfs;
  int32_t watermark_blocks = 1;  // admission keeps at least this many blocks available
  // A state-space model's recurrent-state slots (0: the model keeps none). Each running
  // sequence holds one (admission waits for a free one); its state covers every token it
  // computed, so a sequence adopts a cached prefix only where a state snapshot of that prefix
  // exists (set_state_snapshots), is swapped out only with its state (set_state_swap), and a
  // fork gets a copy of its parent's state (StepPlan::state_copies).
  int32_t state_slots = 0;
};

// A recurrent state moving between a state slot and a host place: a snapshot entry
// (StateSnapshots) or a state swap slot.
struct StateMove {
  int32_t slot;
  int32_t place;
};

// A fork's state: slot dst becomes a copy of slot src before the step's forward pass.
struct StateCopy {
  int32_t src;
  int32_t dst;
};

// Keys the model runner rotates back by `delta` positions after a context shift.
struct KeyShift {
  const Sequence* seq = nullptr;
  std::vector<kv::BlockId> blocks;
  int32_t delta = 0;
};

// Importance-based eviction (engine/kv_importance.h): the sequence's kept slots, gathered head
// by head from the blocks of src into those of dst (keep: per layer and KV head, n_keep slots).
struct KvCompaction {
  Sequence* seq;
  std::vector<kv::BlockId> src, dst;
  std::vector<int32_t> keep;
};

struct ScheduledChunk {
  Sequence* seq;
  // tokens[seq->n_computed, + n_tokens - n_draft) are computed this step, followed by the first
  // n_draft tokens of seq->draft (speculative decoding: they get K/V and logits, but only the
  // ones the model accepts stay; Scheduler::accept_draft), then the n_extra rows of
  // seq->extra (a proposer's own rows: lookahead's window; their K/V is dropped after the step).
  int64_t n_tokens;
  bool samples;      // the chunk reaches the end of the sequence's tokens: sample after it
  int64_t n_draft = 0;
  int64_t n_extra = 0;
  // The rows computed for the sequence itself (the rest are guesses).
  int64_t n_known() const { return n_tokens - n_draft - n_extra; }
};

// A block moving between the KV pool and a host swap slot.
struct SwapCopy {
  kv::BlockId block;
  int32_t slot;
};

// The model runner applies the moves in this order before the forward pass: swap_out (the
// victims' blocks may be handed to others this very step), compactions (they read blocks their
// sequence released this step, which copies, swap_in or the forward pass may then write),
// copies (copy-on-write), swap_in, key_shifts (on blocks only their own sequence holds).
struct StepPlan {
  std::vector<ScheduledChunk> chunks;
  std::vector<SwapCopy> swap_out;
  std::vector<kv::BlockCopy> copies;  // copy-on-write
  std::vector<SwapCopy> swap_in;
  std::vector<Sequence*> preempted;   // moved back to waiting this step
  std::vector<Sequence*> out_of_blocks;  // alone in the pool and still cannot grow: must finish
  std::vector<KeyShift> key_shifts;      // after the copies: context shifts' key rotations
  std::vector<StateCopy> state_copies;   // forks' recurrent states, before the forward pass
  std::vector<KvCompaction> compactions;  // after swap_out, before the copies
  // Recurrent states, after state_copies: preempted ones out to swap, then swapped-in ones
  // back, then cached prefixes' snapshots into the slots of the sequences that adopt them.
  std::vector<StateMove> state_swap_out;
  std::vector<StateMove> state_swap_in;
  std::vector<StateMove> state_restores;
  int64_t n_tokens = 0;
  StepShape shape;  // what the step computes, for its cost model (step_time_model.h)
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
 public:
  // With a swap space, preemption swaps the victim's blocks out when the space has room (and
  // recomputes otherwise).
  Scheduler(SchedulerConfig config, kv::BlockPool& pool, SwapSpace* swap = nullptr);

  const SchedulerConfig& config() const { return config_; }
  // ITL-aware scheduling: from now on, steps with decoding streams are planned so that
  // `model` predicts them to take at most max_step_seconds (step_time_budget.h). `model`
  // outlives the scheduler.
  void limit_step_time(const StepTimeModel& model, double max_step_seconds, int64_t min_prefill_tokens);
  // For sequences with may_shift (off until set).
  void set_shift_policy(const ContextShiftPolicy& policy) { shift_ = policy; }
  const ContextShiftPolicy& shift_policy() const { return shift_; }
  void add(Sequence* seq);
  // Adds a sequence forked from `parent` (already known here): it runs alongside its parent
  // from the next step, or waits with it.
  void add_fork(Sequence* child, const Sequence* parent);
  // Drops a finished or aborted sequence from the queues and releases its blocks.
  void remove(Sequence* seq);
  StepPlan schedule();
  // After the forward pass of `plan`: advances each chunk's n_computed and publishes the blocks
  // it filled to the prefix cache. Chunks of sequences removed since (ended with an error) are
  // skipped: their blocks are gone, and their K/V is not to be trusted.
  void complete(const StepPlan& plan);
  // Speculative decoding, after the step's drafts were verified: the first n_accepted tokens of
  // the chunk's draft were accepted (the caller appended them, and the token sampled after
  // them, to seq->tokens), so their K/V stays and is published like any other; the blocks that
  // only rejected draft tokens reached go back to the pool (a block-table truncation, no copy).
  // Afterwards the sequence holds exactly the blocks of its computed positions, as a sequence
  // that never speculated would.
  void accept_draft(Sequence* seq, int64_t n_accepted);
  // The forward pass of `plan` failed: nothing it wrote is published. Gives back the swap
  // slots it read; the engine removes the plan's sequences.
  void abandon(const StepPlan& plan);

  size_t n_running() const { return running_.size(); }
  size_t n_waiting() const { return waiting_.size(); }
  uint64_t n_preemptions() const { return n_preemptions_; }
  uint64_t n_swapped_out_blocks() const { return n_swapped_out_blocks_; }
  uint64_t n_context_shifts() const { return n_context_shifts_; }
  // Free recurrent-state slots (0 for a model without state).
  int32_t n_free_state_slots() const { return state_slots_ ? state_slots_->n_free() : 0; }
  // The recurrent-state prefix cache (state_snapshots.h): prompts of a state model snapshot
  // their state at block boundaries (prefill chunks are cut to end on one) and adopt the
  // deepest snapshot of their prefix, only as deep as the prefix cache also holds the prefix's
  // blocks (a hybrid's attention layers need their K/V). Null: none (the default).
  void set_state_snapshots(StateSnapshots* snapshots) { snapshots_ = snapshots; }
  // After complete(): the states to snapshot now (slot -> entry), before the slots run again.
  std::vector<StateMove> take_state_snapshots() { return std::move(pending_snapshots_); }
  // Swap preemption of a state model: the victim's state goes to one of these host slots (of
  // one state slot's bytes) beside its K/V blocks; without a free one it is recomputed.
  void set_state_swap(SwapSpace* state_swap) { state_swap_ = state_swap; }
  // Importance-based eviction: the scores are per layer and KV head (n_lh of them a slot);
  // layer_windows: per layer, 0 or its sliding window (those layers keep their recent slots).
  void set_importance_heads(int64_t n_lh, std::vector<int64_t> layer_windows = {}) {
    importance_heads_ = n_lh;
    importance_layer_windows_ = std::move(layer_windows);
  }
  uint64_t n_kv_evictions() const { return n_kv_evictions_; }

 private:
  bool ranks_before(const Sequence* a, const Sequence* b) const;
  int64_t running_seats() const;
  // The blocks admission leaves free: the watermark while something runs, none otherwise.
  int32_t admission_reserve() const { return running_.empty() ? 0 : config_.watermark_blocks; }
  void preempt(Sequence* victim, StepPlan& plan);
  void preempt_for_priority(StepPlan& plan);
  // Reserves blocks for `n` tokens of a running sequence, preempting others if needed; false
  // when the sequence itself had to go.
  bool reserve_running(Sequence* seq, int64_t n, StepPlan& plan);
  Sequence* lowest_unscheduled_running(const Sequence* except) const;
  // The host slots the plan's swap-ins read from are free again.
  void release_swapped_in(const StepPlan& plan);
  void insert_ranked(std::vector<Sequence*>& queue, Sequence* seq) const;
  void schedule_running(StepPlan& plan, int64_t& budget);
  // n, or fewer or more tokens so that a chunk does not end inside an image span that attends
  // both ways (prompt_images.h: whole_image_span_chunk).
  int64_t whole_image_spans(const Sequence& seq, int64_t n, int64_t budget) const;
  void admit_waiting(StepPlan& plan, int64_t& budget);
  void append_drafts(StepPlan& plan, int64_t& budget);
  bool swap_out(Sequence* victim, StepPlan& plan);
  // A decoding sequence at the end of its context drops old positions first (context_shift.h);
  // false when it cannot (the pool lacks blocks for the copies): it then ends, out of blocks.
  bool shift_if_due(Sequence* seq, StepPlan& plan);
  // Importance-based eviction before a decode (kv_importance.h); false when the sequence had to
  // leave (out of blocks for the copies of shared blocks).
  bool evict_if_due(Sequence* seq, StepPlan& plan);
  bool admit_swapped(Sequence* seq, int64_t n, StepPlan& plan);
  // Fairness between clients (client_seats.h, prefill_share.h).
  void preempt_for_fairness(StepPlan& plan);
  // Shares `budget` between the prompts that could take a prefill chunk now (running ones not
  // yet scheduled, waiting ones admission would consider).
  void share_prefill(int64_t budget);
  // The most tokens `seq` may take this step: its grant, or no limit when it has none.
  int64_t prefill_grant(const Sequence* seq) const;
  // Recurrent-state slots (scheduler_states.cc): whether `seq` holds one now (taking a free one
  // when it had none), and giving it back.
  bool take_state_slot(Sequence* seq);
  void release_state_slot(Sequence* seq);
  // A fork of a running parent gets a copy of its state, or, without a free slot, waits to
  // recompute its tokens.
  void fork_state(Sequence* child, const Sequence* parent);
  // A waiting state sequence's cached prefix: the deepest snapshot (and the prefix cache's
  // blocks as deep) of at most `limit` tokens; returns the tokens it skips (0: none,
  // holding no blocks). The snapshot's entry waits in seq->state_restore until admission.
  int64_t adopt_state_prefix(Sequence* seq, int64_t limit);
  // n, or fewer so that a prompt chunk ends on the last block boundary it crosses (where a
  // snapshot is taken), when snapshots are on.
  int64_t snapshot_cut(const Sequence& seq, int64_t n) const;
  // In complete(): a chunk that ended a prompt's full block snapshots its state.
  void snapshot_if_due(Sequence* seq);
  // Swap preemption's state half: a host slot for the victim's state, or false.
  bool swap_out_state(Sequence* victim, StepPlan& plan);

  SchedulerConfig config_;
  ContextShiftPolicy shift_;
  kv::BlockPool& pool_;
  SwapSpace* swap_;
  std::optional<StepTimeBudget> time_budget_;
  ClientSeats seats_;                                            // counted at each schedule()
  std::unordered_map<const Sequence*, int64_t> prefill_grants_;  // this step's, when shared
  std::vector<Sequence*> running_;  // kept in rank order
  std::vector<Sequence*> waiting_;  // kept in rank order
  uint64_t n_preemptions_ = 0;
  uint64_t n_swapped_out_blocks_ = 0;
  uint64_t n_context_shifts_ = 0;
  std::optional<kv::StateSlots> state_slots_;
  std::vector<StateCopy> pending_state_copies_;  // forks since the last plan
  StateSnapshots* snapshots_ = nullptr;
  std::vector<StateMove> pending_snapshots_;  // complete()'s, for the runner
  SwapSpace* state_swap_ = nullptr;
  int64_t importance_heads_ = 0;
  std::vector<int64_t> importance_layer_windows_;
  uint64_t n_kv_evictions_ = 0;
};

}  // namespace lumen::engine
