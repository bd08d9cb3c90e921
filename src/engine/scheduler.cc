#include "engine/scheduler.h"

#include <algorithm>
#include <limits>

#include "engine/prefill_share.h"
#include "engine/prompt_images.h"
#include "util/error.h"

namespace lumen::engine {

Scheduler::Scheduler(SchedulerConfig config, kv::BlockPool& pool, SwapSpace* swap)
    : config_(config), pool_(pool), swap_(swap), seats_(config.max_num_seqs) {
  if (config_.max_num_seqs <= 0 || config_.max_num_batched_tokens <= 0) {
    fail("scheduler: max_num_seqs ({}) and max_num_batched_tokens ({}) must be positive",
         config_.max_num_seqs, config_.max_num_batched_tokens);
  }
  if (config_.state_slots > 0) state_slots_.emplace(config_.state_slots);
}

void Scheduler::limit_step_time(const StepTimeModel& model, double max_step_seconds, int64_t min_prefill_tokens) {
  time_budget_.emplace(model, max_step_seconds, min_prefill_tokens);
}

bool Scheduler::ranks_before(const Sequence* a, const Sequence* b) const {
  if (config_.policy == SchedulingPolicy::Priority && a->priority != b->priority) {
    return a->priority > b->priority;
  }
  return a->arrival < b->arrival;
}

void Scheduler::insert_ranked(std::vector<Sequence*>& queue, Sequence* seq) const {
  auto at = std::upper_bound(queue.begin(), queue.end(), seq,
                             [this](const Sequence* a, const Sequence* b) { return ranks_before(a, b); });
  queue.insert(at, seq);
}

void Scheduler::add(Sequence* seq) {
  seq->state = SequenceState::Waiting;
  insert_ranked(waiting_, seq);
}

void Scheduler::add_fork(Sequence* child, const Sequence* parent) {
  if (state_slots_) fork_state(child, parent);  // without a slot the child waits to recompute
  if (parent->state == SequenceState::Running && (!state_slots_ || child->state_slot >= 0)) {
    child->state = SequenceState::Running;
    insert_ranked(running_, child);
  } else {
    add(child);
  }
}

void Scheduler::remove(Sequence* seq) {
  std::erase(running_, seq);
  std::erase(waiting_, seq);
  seq->blocks.release_all();
  if (swap_ != nullptr && !seq->swap_slots.empty()) swap_->release(seq->swap_slots);
  seq->swap_slots.clear();
  if (state_swap_ != nullptr && seq->state_swap_slot >= 0) state_swap_->release({seq->state_swap_slot});
  seq->state_swap_slot = -1;
  seq->state_restore = -1;
  release_state_slot(seq);
  seq->state = SequenceState::Finished;
}

// Records the victim's written blocks for the runner to copy out; false when the swap space
// lacks room (the victim is then recomputed).
bool Scheduler::swap_out(Sequence* victim, StepPlan& plan) {
  // A sequence with nothing left to compute (a beam waiting for its siblings) would come back
  // with no token to run: it is recomputed instead (the engine ignores the repeated logits).
  if (swap_ == nullptr || victim->n_computed == 0 || victim->uncomputed() == 0) return false;
  const std::vector<kv::BlockId> held = victim->blocks.held_blocks(victim->n_computed);
  const auto n_blocks = static_cast<int64_t>(held.size());
  std::optional<std::vector<int32_t>> slots = swap_->allocate(n_blocks);
  if (!slots) return false;
  if (state_slots_ && !swap_out_state(victim, plan)) {
    swap_->release(*slots);
    return false;
  }
  for (size_t i = 0; i < held.size(); ++i) plan.swap_out.push_back({held[i], (*slots)[i]});
  victim->swap_slots = std::move(*slots);
  n_swapped_out_blocks_ += static_cast<uint64_t>(n_blocks);
  return true;
}

namespace {

// A sequence shifted this step that then leaves it (preempted, out of blocks) gives back the
// blocks the rotation was for: the rotation is dropped. True when there was one.
bool drop_key_shift(StepPlan& plan, const Sequence* seq) {
  const bool compacted = std::erase_if(plan.compactions, [seq](const KvCompaction& c) { return c.seq == seq; }) > 0;
  return std::erase_if(plan.key_shifts, [seq](const KeyShift& s) { return s.seq == seq; }) > 0 || compacted;
}

}  // namespace

void Scheduler::preempt(Sequence* victim, StepPlan& plan) {
  std::erase(running_, victim);
  // Its keys were not rotated (or its kept slots gathered) yet: swapped out now, they would come
  // back unchanged. It is recomputed instead, from its (already shifted) tokens, or from every
  // token it had (an eviction's are restored).
  const bool shifted_now = drop_key_shift(plan, victim);
  // A recurrent state goes to swap with the K/V (swap_out_state), or the victim recomputes it.
  if (!shifted_now && swap_out(victim, plan)) {
    victim->prefix_checked = true;  // it comes back with its own K/V, not the prefix cache's
  } else {
    victim->n_computed = 0;
    victim->prefix_checked = false;
    restore_evicted(*victim);
  }
  victim->blocks.release_all();
  release_state_slot(victim);
  victim->state = SequenceState::Waiting;
  ++victim->n_preemptions;
  ++n_preemptions_;
  seats_.preempted(*victim);
  insert_ranked(waiting_, victim);
  plan.preempted.push_back(victim);
}

Sequence* Scheduler::lowest_unscheduled_running(const Sequence* except) const {
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (*it != except && !(*it)->scheduled_now) return *it;
  }
  return nullptr;
}

bool Scheduler::reserve_running(Sequence* seq, int64_t n, StepPlan& plan) {
  while (!seq->blocks.reserve(seq->n_computed, n, plan.copies)) {
    if (Sequence* victim = lowest_unscheduled_running(seq);
        victim != nullptr && !ranks_before(victim, seq)) {
      preempt(victim, plan);
      continue;
    }
    if (running_.size() == 1) {
      // Nothing else holds blocks: the pool cannot hold this sequence at all.
      std::erase(running_, seq);
      drop_key_shift(plan, seq);
      plan.out_of_blocks.push_back(seq);
    } else {
      preempt(seq, plan);
    }
    return false;
  }
  return true;
}

bool Scheduler::shift_if_due(Sequence* seq, StepPlan& plan) {
  if (!seq->may_shift) return true;
  const int64_t bs = pool_.block_size();
  const std::optional<ShiftPlan> due = shift_due(shift_, seq->n_computed, bs);
  if (!due) return true;
  KeyShift shift;
  shift.seq = seq;
  if (!apply_shift(*seq, *due, bs, plan.copies, shift.blocks)) {
    std::erase(running_, seq);
    plan.out_of_blocks.push_back(seq);
    return false;
  }
  shift.delta = -static_cast<int32_t>(static_cast<int64_t>(due->discard_blocks) * bs);
  if (!shift.blocks.empty()) plan.key_shifts.push_back(std::move(shift));
  ++n_context_shifts_;
  return true;
}

bool Scheduler::evict_if_due(Sequence* seq, StepPlan& plan) {
  if (!seq->importance.config.enabled()) return true;
  const std::optional<int64_t> n_keep = eviction_due(seq->importance, seq->n_computed, pool_.block_size());
  if (!n_keep) return true;
  const int64_t n_slots = seq->n_computed, n_lh = importance_heads_;
  const KvImportance& c = seq->importance.config;
  std::vector<int32_t> keep = c.method == KvImportanceMethod::SnapKv
                                  ? select_snapkv(seq->importance.scores, n_slots, n_lh, c.window, c.kernel, *n_keep)
                                  : select_h2o(seq->importance.scores, n_slots, n_lh, c.recent, *n_keep);
  if (!importance_layer_windows_.empty()) {
    const auto n_kv_heads = n_lh / std::ssize(importance_layer_windows_);
    keep_recent_in_local_layers(keep, importance_layer_windows_, n_kv_heads, n_slots, *n_keep);
  }
  std::optional<kv::SequenceBlocks::Compaction> tables = seq->blocks.compact(*n_keep);
  if (!tables) {
    std::erase(running_, seq);
    plan.out_of_blocks.push_back(seq);
    return false;
  }
  record_eviction(*seq, keep, *n_keep, n_lh);
  plan.compactions.push_back({seq, std::move(tables->src), std::move(tables->dst), std::move(keep)});
  ++n_kv_evictions_;
  return true;
}

// Grants and the time budget are shares, and may stay below a span's length for many steps;
// the token budget is the step's hard limit, which every span fits (check_whole_image_spans).
int64_t Scheduler::whole_image_spans(const Sequence& seq, int64_t n, int64_t budget) const {
  if (!seq.images_both_ways || !seq.images) return n;
  return whole_image_span_chunk(*seq.images, seq.n_computed, n, std::min(seq.uncomputed(), budget));
}

void Scheduler::schedule_running(StepPlan& plan, int64_t& budget) {
  // Two passes over a snapshot (preemption edits running_): decodes, then prefill chunks.
  const std::vector<Sequence*> snapshot = running_;
  for (const bool decode_pass : {true, false}) {
    if (!decode_pass) share_prefill(budget);
    for (Sequence* seq : snapshot) {
      if (budget == 0) return;
      if (seq->state != SequenceState::Running || seq->scheduled_now || seq->awaiting_mask || seq->uncomputed() == 0 ||
          seq->decoding() != decode_pass) {
        continue;
      }
      if (decode_pass && (!shift_if_due(seq, plan) || !evict_if_due(seq, plan))) continue;
      int64_t n = std::min(seq->uncomputed(), budget);
      if (!decode_pass) n = std::min(n, prefill_grant(seq));
      if (!decode_pass && time_budget_) n = time_budget_->prefill_room(*seq, n);
      n = whole_image_spans(*seq, n, budget);
      if (!decode_pass) n = snapshot_cut(*seq, n);
      if (n == 0) continue;
      if (!reserve_running(seq, n, plan)) continue;
      seq->scheduled_now = true;
      plan.chunks.push_back({seq, n, n == seq->uncomputed()});
      if (time_budget_) time_budget_->add(*seq, n, n == seq->uncomputed() ? 1 : 0);
      budget -= n;
    }
  }
}

int64_t Scheduler::running_seats() const {
  int64_t seats = 0;
  for (const Sequence* seq : running_) seats += seq->seats;
  return seats;
}

void Scheduler::admit_waiting(StepPlan& plan, int64_t& budget) {
  for (size_t i = 0; i < waiting_.size() && budget > 0;) {
    Sequence* seq = waiting_[i];
    // A sequence beyond its client's share while others wait, or granted no prefill this step,
    // lets the ones behind it go first (client_seats.h, prefill_share.h).
    const int64_t grant = prefill_grant(seq);
    // One preempted while its mask was late comes back once it has sampled (its logits are kept).
    if (seq->awaiting_mask || !seats_.may_admit(*seq) || grant == 0) {
      ++i;
      continue;
    }
    // A group wider than max_num_seqs still runs, alone.
    if (!running_.empty() && running_seats() + seq->seats > config_.max_num_seqs) return;
    if (!seq->swap_slots.empty()) {
      int64_t n = std::min({seq->uncomputed(), budget, grant});
      // A swapped-out stream that comes back to decode is a decode, not held back.
      if (time_budget_ && !seq->decoding()) n = time_budget_->prefill_room(*seq, n);
      n = whole_image_spans(*seq, n, budget);
      if (n == 0 || !admit_swapped(seq, n, plan)) return;
      if (time_budget_) time_budget_->add(*seq, n, n == seq->uncomputed() ? 1 : 0);
      budget -= n;
      continue;
    }
    if (!seq->prefix_checked) {
      // At least the last token is computed, so the step yields logits to sample from.
      // Prompt positions whose logits are wanted (prompt_logprobs) are computed, not adopted.
      const int64_t limit = seq->wants_prompt_logits() ? seq->next_prompt_logit
                                                        : static_cast<int64_t>(seq->tokens.size()) - 1;
      // A state model's cached prefix needs its state too (a snapshot), not only K/V.
      seq->n_computed =
          state_slots_ ? adopt_state_prefix(seq, limit) : seq->blocks.adopt_cached_prefix(seq->tokens, limit);
      seq->prefix_checked = true;
    }
    int64_t n = std::min({seq->uncomputed(), budget, grant});
    if (time_budget_) n = time_budget_->prefill_room(*seq, n);
    n = whole_image_spans(*seq, n, budget);
    n = snapshot_cut(*seq, n);
    const int32_t need = seq->blocks.blocks_needed(seq->n_computed, n);
    if (n == 0 || pool_.n_available() - need < admission_reserve() || (state_slots_ && state_slots_->n_free() == 0) ||
        !seq->blocks.reserve(seq->n_computed, n, plan.copies) || !take_state_slot(seq)) {
      // Not now: give back what the prefix lookup took, so waiting requests hold no blocks.
      seq->blocks.release_all();
      seq->n_computed = 0;
      seq->prefix_checked = false;
      seq->state_restore = -1;
      return;
    }
    if (seq->state_restore >= 0) {
      plan.state_restores.push_back({seq->state_slot, seq->state_restore});
      seq->state_restore = -1;
    }
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    seats_.admitted(*seq);
    seq->state = SequenceState::Running;
    seq->scheduled_now = true;
    insert_ranked(running_, seq);
    plan.chunks.push_back({seq, n, n == seq->uncomputed()});
    if (time_budget_) time_budget_->add(*seq, n, n == seq->uncomputed() ? 1 : 0);
    budget -= n;
  }
}

// A swapped-out sequence returns into fresh blocks: its K/V is copied back from the host slots
// and its next chunk computed in the same step.
bool Scheduler::admit_swapped(Sequence* seq, int64_t n, StepPlan& plan) {
  const int32_t need = seq->blocks.blocks_needed_to_restore(seq->n_computed, n);
  // A state model's sequence brings its state back into a free slot.
  if (state_slots_ && state_slots_->n_free() == 0) return false;
  if (pool_.n_available() - need < admission_reserve() || !seq->blocks.restore(seq->n_computed, n, plan.copies)) {
    return false;
  }
  if (state_slots_) {
    if (seq->state_swap_slot < 0 || !take_state_slot(seq))
      fail("scheduler: a swapped-out state sequence without its state");
    plan.state_swap_in.push_back({seq->state_slot, seq->state_swap_slot});
    seq->state_swap_slot = -1;  // freed in complete(), after the runner has read it
  }
  const std::vector<kv::BlockId> restored = seq->blocks.held_blocks(seq->n_computed);
  if (restored.size() != seq->swap_slots.size()) fail("scheduler: {} swapped blocks come back into {}", seq->swap_slots.size(), restored.size());
  for (size_t i = 0; i < restored.size(); ++i) plan.swap_in.push_back({restored[i], seq->swap_slots[i]});
  // The slots are freed in complete(), after the runner has read them.
  seq->swap_slots.clear();
  std::erase(waiting_, seq);
  seats_.admitted(*seq);
  seq->state = SequenceState::Running;
  seq->scheduled_now = true;
  insert_ranked(running_, seq);
  plan.chunks.push_back({seq, n, n == seq->uncomputed()});
  return true;
}

void Scheduler::preempt_for_priority(StepPlan& plan) {
  if (config_.policy != SchedulingPolicy::Priority || waiting_.empty()) return;
  const Sequence* top = waiting_.front();
  if (top->awaiting_mask) return;  // it cannot run yet: nothing is preempted for it
  const int64_t n = std::min(top->uncomputed(), config_.max_num_batched_tokens);
  // A swapped-out sequence needs blocks for what it brings back too.
  const int32_t need = top->swap_slots.empty()
                           ? top->blocks.blocks_needed(top->n_computed, n)
                           : top->blocks.blocks_needed_to_restore(top->n_computed, n);
  while (running_seats() + top->seats > config_.max_num_seqs ||
         pool_.n_available() - need < config_.watermark_blocks) {
    if (running_.empty() || running_.back()->priority >= top->priority) return;
    preempt(running_.back(), plan);
  }
}

// ---- Fairness between clients (client_seats.h, prefill_share.h) ----

void Scheduler::preempt_for_fairness(StepPlan& plan) {
  // The first waiting sequence its client is entitled to run; when it does not fit, seats held
  // beyond their share by other clients make room, the lowest-ranked first.
  auto entitled = std::find_if(waiting_.begin(), waiting_.end(),
                               [this](const Sequence* seq) { return !seq->awaiting_mask && seats_.entitled(*seq); });
  if (entitled == waiting_.end()) return;
  const Sequence* top = *entitled;
  const int64_t n = std::min(top->uncomputed(), config_.max_num_batched_tokens);
  const int32_t need = top->swap_slots.empty() ? top->blocks.blocks_needed(top->n_computed, n)
                                               : top->blocks.blocks_needed_to_restore(top->n_computed, n);
  auto fits = [&] {
    return running_.empty() || (running_seats() + top->seats <= config_.max_num_seqs &&
                                pool_.n_available() - need >= config_.watermark_blocks);
  };
  while (!fits()) {
    // Under priorities a client's excess of higher priority stays (priority wins over share).
    auto victim = std::find_if(running_.rbegin(), running_.rend(), [&](const Sequence* seq) {
      return seats_.over_share(seq->client) &&
             (config_.policy != SchedulingPolicy::Priority || seq->priority <= top->priority);
    });
    if (victim == running_.rend()) return;
    preempt(*victim, plan);
  }
}

void Scheduler::share_prefill(int64_t budget) {
  prefill_grants_.clear();
  std::vector<Sequence*> prompts;
  for (Sequence* seq : running_) {
    if (!seq->scheduled_now && !seq->awaiting_mask && seq->uncomputed() > 0 && !seq->decoding()) prompts.push_back(seq);
  }
  // The waiting ones admission will consider, judged as it will judge them.
  ClientSeats seats = seats_;
  int64_t taken = running_seats();
  for (Sequence* seq : waiting_) {
    if (seq->awaiting_mask || !seats.may_admit(*seq)) continue;
    if (taken > 0 && taken + seq->seats > config_.max_num_seqs) break;
    taken += seq->seats;
    seats.admitted(*seq);
    prompts.push_back(seq);
  }
  // One prompt takes what it can, as it always did.
  if (prompts.size() < 2) return;
  std::stable_sort(prompts.begin(), prompts.end(),
                   [this](const Sequence* a, const Sequence* b) { return ranks_before(a, b); });
  std::vector<int64_t> needs;
  needs.reserve(prompts.size());
  for (const Sequence* seq : prompts) needs.push_back(seq->uncomputed());
  const std::vector<int64_t> grants = share_prefill_budget(needs, budget);
  for (size_t i = 0; i < prompts.size(); ++i) prefill_grants_[prompts[i]] = grants[i];
}

int64_t Scheduler::prefill_grant(const Sequence* seq) const {
  auto it = prefill_grants_.find(seq);
  return it == prefill_grants_.end() ? std::numeric_limits<int64_t>::max() : it->second;
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  // Before anything this step may preempt: a fork's copy reads its parent's slot as the last
  // step left it (a slot released and handed on here is zeroed after the copies run).
  plan.state_copies.swap(pending_state_copies_);
  for (Sequence* seq : running_) seq->scheduled_now = false;
  for (Sequence* seq : waiting_) seq->scheduled_now = false;
  int64_t budget = config_.max_num_batched_tokens;
  if (time_budget_) time_budget_->start();
  seats_.count(running_, waiting_);
  prefill_grants_.clear();
  preempt_for_priority(plan);
  preempt_for_fairness(plan);
  const size_t priority_preemptions = plan.preempted.size();
  schedule_running(plan, budget);
  // Preempting for memory means the pool is full: admitting now would only thrash.
  if (plan.preempted.size() == priority_preemptions) admit_waiting(plan, budget);
  append_drafts(plan, budget);
  for (const ScheduledChunk& chunk : plan.chunks) {
    plan.n_tokens += chunk.n_tokens;
    const Sequence& seq = *chunk.seq;
    plan.shape.add_chunk(seq.n_computed, chunk.n_tokens, chunk.samples ? 1 + chunk.n_draft + chunk.n_extra : 0,
                         !seq.decoding());
  }
  return plan;
}

void Scheduler::append_drafts(StepPlan& plan, int64_t& budget) {
  for (ScheduledChunk& chunk : plan.chunks) {
    Sequence* seq = chunk.seq;
    if ((seq->draft.empty() && seq->extra.empty()) || !chunk.samples || !seq->decoding()) continue;
    int64_t n = std::min(static_cast<int64_t>(seq->draft.size()), budget);
    if (time_budget_) n = time_budget_->draft_room(*seq, chunk.n_tokens, n);
    // A proposer's extra rows come whole or not at all (their tree refers to one another).
    int64_t extra = static_cast<int64_t>(seq->extra.size());
    if (extra > budget - n || (time_budget_ && time_budget_->draft_room(*seq, chunk.n_tokens, n + extra) < n + extra)) {
      extra = 0;
    }
    // Blocks beyond the decode's own come from the free ones above the watermark, or not at all.
    const int32_t base = seq->blocks.blocks_needed(seq->n_computed, chunk.n_tokens);
    auto fits = [&](int64_t rows) {
      return pool_.n_available() - (seq->blocks.blocks_needed(seq->n_computed, chunk.n_tokens + rows) - base) >=
             config_.watermark_blocks;
    };
    if (extra > 0 && !fits(n + extra)) extra = 0;
    while (n > 0 && !fits(n + extra)) --n;
    if (n + extra == 0 || !seq->blocks.reserve(seq->n_computed, chunk.n_tokens + n + extra, plan.copies)) continue;
    if (time_budget_) time_budget_->add_draft(*seq, chunk.n_tokens, n + extra);
    chunk.n_tokens += n + extra;
    chunk.n_draft = n;
    chunk.n_extra = extra;
    budget -= n + extra;
  }
}

void Scheduler::accept_draft(Sequence* seq, int64_t n_accepted) {
  if (n_accepted < 0 || seq->n_computed + n_accepted >= static_cast<int64_t>(seq->tokens.size())) {
    fail("scheduler: {} accepted draft tokens, but the sequence has {} computed of {} tokens", n_accepted,
         seq->n_computed, seq->tokens.size());
  }
  seq->n_computed += n_accepted;
  seq->blocks.commit(seq->tokens, seq->n_computed);
  seq->blocks.truncate(seq->n_computed);
  seq->draft.clear();
  seq->draft_parents.clear();
}

void Scheduler::abandon(const StepPlan& plan) { release_swapped_in(plan); }

void Scheduler::release_swapped_in(const StepPlan& plan) {
  if (swap_ != nullptr) {
    std::vector<int32_t> read;
    for (const SwapCopy& in : plan.swap_in) read.push_back(in.slot);
    swap_->release(read);
  }
  if (state_swap_ != nullptr) {
    for (const StateMove& in : plan.state_swap_in) state_swap_->release({in.place});
  }
}

void Scheduler::complete(const StepPlan& plan) {
  release_swapped_in(plan);
  for (const ScheduledChunk& chunk : plan.chunks) {
    Sequence* seq = chunk.seq;
    if (seq->state == SequenceState::Finished) continue;
    // Draft tokens count once accepted (accept_draft); extra rows never.
    seq->n_computed += chunk.n_known();
    seq->blocks.commit(seq->tokens, seq->n_computed);
    snapshot_if_due(seq);
    // Without a draft there is nothing to accept: the extra rows' positions go now.
    if (chunk.n_extra > 0 && chunk.n_draft == 0) seq->blocks.truncate(seq->n_computed);
  }
}

}  // namespace lumen::engine
