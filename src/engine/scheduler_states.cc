// The scheduler's recurrent-state slots (SchedulerConfig::state_slots): a state-space model's
// sequences each hold one while they run. Only bookkeeping: the model runner copies forks'
// states (StepPlan::state_copies), and the forward pass zeroes a slot whose sequence starts
// at position 0 (a new sequence, or one recomputing after preemption).
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

}  // namespace lumen::engine
