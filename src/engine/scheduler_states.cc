// The scheduler's recurrent-state slots (SchedulerConfig::state_slots): a state-space model's
// sequences each hold one while they run. Only bookkeeping: the model runner copies forks'
// states (StepPlan::state_copies), and the forward pass zeroes a slot whose sequence starts
// at position 0 (a new sequence, or one recomputing after preemption).
#include <algorithm>

#include "engine/scheduler.h"

namespace lumen::engine {

bool Scheduler::take_state_slot(Sequence* seq) {
  if (!state_slots_ || seq->state_slot >= 0) return true;
  const std::optional<int32_t> slot = state_slots_->allocate();
  if (!slot) return false;
  seq->state_slot = *slot;
  return true;
}

void Scheduler::release_state_slot(Sequence* seq) {
  if (!state_slots_ || seq->state_slot < 0) return;
  state_slots_->release(seq->state_slot);
  seq->state_slot = -1;
}

void Scheduler::fork_state(Sequence* child, const Sequence* parent) {
  child->state_slot = -1;  // the constructor copied none, but be explicit: slots are never shared
  if (parent->state_slot >= 0 && parent->n_computed > 0 && take_state_slot(child)) {
    pending_state_copies_.push_back({parent->state_slot, child->state_slot});
    return;
  }
  // No state to copy, or no slot for it: the child recomputes its tokens from the start.
  child->blocks.release_all();
  child->n_computed = 0;
  child->prefix_checked = false;
}

// ---- The recurrent-state prefix cache (state_snapshots.h) ----

int64_t Scheduler::adopt_state_prefix(Sequence* seq, int64_t limit) {
  seq->state_restore = -1;
  // Prompts with images neither take nor leave snapshots: an image's positions hold placeholder
  // ids that stand for any image, and snapshots are keyed by token ids only (KV blocks also
  // hash the image's content).
  if (snapshots_ == nullptr || seq->images) return 0;
  // The blocks first: a snapshot deeper than the cached K/V (a hybrid's attention layers)
  // would skip positions whose K/V is gone.
  const int64_t cached = seq->blocks.adopt_cached_prefix(seq->tokens, limit);
  const std::optional<StateSnapshots::Hit> hit =
      snapshots_->find_deepest(seq->tokens, seq->blocks.cache_salt(), cached);
  if (!hit) {
    seq->blocks.release_all();
    return 0;
  }
  seq->blocks.truncate(hit->n_tokens);
  seq->state_restore = hit->entry;
  return hit->n_tokens;
}

int64_t Scheduler::snapshot_cut(const Sequence& seq, int64_t n) const {
  if (snapshots_ == nullptr || seq.images || seq.n_computed >= seq.prompt_len) return n;
  const int64_t bs = pool_.block_size();
  const int64_t end = seq.n_computed + n;
  const int64_t boundary = std::min(end, seq.prompt_len) / bs * bs;
  // A chunk that runs past the prompt's last boundary stops there: the next step computes the
  // rest (less than a block) from the snapshot just taken.
  return boundary > seq.n_computed && boundary < end ? boundary - seq.n_computed : n;
}

void Scheduler::snapshot_if_due(Sequence* seq) {
  const int64_t n = seq->n_computed;
  if (snapshots_ == nullptr || seq->images || seq->state_slot < 0 || n == 0 || n > seq->prompt_len ||
      n % pool_.block_size() != 0) {
    return;
  }
  const std::span<const int32_t> prefix = std::span<const int32_t>(seq->tokens).first(static_cast<size_t>(n));
  if (const std::optional<int32_t> entry = snapshots_->insert(prefix, seq->blocks.cache_salt())) {
    pending_snapshots_.push_back({seq->state_slot, *entry});
  }
}

// ---- Swap preemption of a state model ----

bool Scheduler::swap_out_state(Sequence* victim, StepPlan& plan) {
  if (state_swap_ == nullptr || victim->state_slot < 0) return false;
  const std::optional<std::vector<int32_t>> place = state_swap_->allocate(1);
  if (!place) return false;
  victim->state_swap_slot = place->front();
  // Read before anything this step writes the slot it gives back (state_copies run first:
  // a fork's copy into it lands before it leaves).
  plan.state_swap_out.push_back({victim->state_slot, victim->state_swap_slot});
  return true;
}

}  // namespace lumen::engine
