#pragma once
// One request as the scheduler sees it: its tokens (prompt, then what it generated), how many of
// them already have K/V in the cache, and the blocks that hold it. The scheduler moves it between
// waiting and running; nothing here touches tensor memory.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kv_importance.h"
#include "kv/sequence_kv.h"
#include "lumen/prompt_image.h"
#include "spec/acceptance_history.h"
#include "spec/proposer.h"

namespace lumen::engine {

enum class SequenceState { Waiting, Running, Finished };

struct Sequence {
  Sequence(uint64_t request_id, std::vector<int32_t> prompt, int rank_priority,
           uint64_t arrival_order, const kv::KvSpace& kv_space, uint64_t cache_salt)
      : id(request_id),
        priority(rank_priority),
        arrival(arrival_order),
        tokens(std::move(prompt)),
        prompt_len(static_cast<int64_t>(tokens.size())),
        next_prompt_logit(prompt_len - 1),
        blocks(kv_space, cache_salt) {}

  // A sequence that continues `parent` (n > 1, beam search): the same tokens and K/V, in blocks
  // shared with it until either writes (copy-on-write), and the same place in the queues' order.
  Sequence(uint64_t sequence_id, const Sequence& parent)
      : id(sequence_id),
        priority(parent.priority),
        arrival(parent.arrival),
        tokens(parent.tokens),
        prompt_len(parent.prompt_len),
        next_prompt_logit(parent.next_prompt_logit),
        n_computed(parent.n_computed),
        blocks(parent.blocks.fork()),
        prefix_checked(parent.prefix_checked),
        may_shift(parent.may_shift),
        n_dropped_generated(parent.n_dropped_generated),
        importance(parent.importance),
        client(parent.client),
        images(parent.images),
        images_both_ways(parent.images_both_ways) {}

  uint64_t id;
  int priority;      // larger runs first (priority policy); ignored under FCFS
  uint64_t arrival;  // submission order: ties in priority, and FCFS, go by it
  std::vector<int32_t> tokens;  // prompt followed by the generated tokens
  int64_t prompt_len;
  // prompt_logprobs: logits are wanted for prompt positions [next_prompt_logit, prompt_len - 1)
  // (each predicts the next prompt token); prompt_len - 1, i.e. none, unless asked for.
  int64_t next_prompt_logit;
  int64_t n_computed = 0;       // tokens[0, n_computed) have K/V in `blocks`
  kv::SequenceKv blocks;
  SequenceState state = SequenceState::Waiting;
  bool prefix_checked = false;  // the prefix cache was consulted since it last held no blocks
  bool scheduled_now = false;   // has a chunk in the step being planned
  int64_t n_preemptions = 0;
  // Places among max_num_seqs it takes when admitted: the sequences it will fork into (n > 1,
  // best_of, beam width) are counted from the start, so forking never overfills the batch.
  int64_t seats = 1;
  // While swapped out: the host slots holding its first blocks (K/V of tokens[0, n_computed)).
  std::vector<int32_t> swap_slots;
  // Context shift (engine/context_shift.h): whether this sequence drops old positions at the end
  // of its context instead of finishing, and how many generated tokens it dropped. `tokens`
  // then holds only what is still in the cache, and prompt_len what is left of the prompt.
  bool may_shift = false;
  int64_t n_dropped_generated = 0;
  // Importance-based eviction (engine/kv_importance.h): its method, scores and what it evicted.
  // Like a shift, an eviction leaves in `tokens` only as many entries as the cache holds.
  KvImportanceState importance;
  // Who asked for it (Engine::add_request_n's `client`): the scheduler shares seats and prefill
  // between clients (client_seats.h). 0 for callers that do not say, i.e. one client.
  uint64_t client = 0;
  // Images in the prompt (engine/prompt_images.h): their features replace the embeddings of
  // their positions whenever those are computed (prefill, recompute after preemption). Shared
  // with the sequence's forks; null for a text prompt.
  std::shared_ptr<const std::vector<PromptImage>> images;
  // Each image span's positions attend to each other both ways (ImageEncoder::
  // image_attends_both_ways): the scheduler never ends a chunk inside one, and the runner lets
  // its rows see the whole span.
  bool images_both_ways = false;
  // Its next grammar mask was not ready when its logits were: it holds that row and is not
  // scheduled, admitted or preempted for until the mask is (OutputProcessor::resume_deferred).
  bool awaiting_mask = false;
  // A state-space model's recurrent-state slot (kv/state_slots.h), held while it runs; -1 while
  // it holds none (waiting, or a model without state).
  int32_t state_slot = -1;
  // While swapped out: the host slot holding that state (-1: none). While waiting to be
  // admitted with a cached prefix: the state snapshot to start from (-1: none).
  int32_t state_swap_slot = -1;
  int32_t state_restore = -1;
  // Speculative decoding (engine/speculation.h): the tokens proposed to follow the last one,
  // set before a step is planned and cleared once the step verified them (never part of
  // `tokens`: only what the model accepts is appended there), and how its drafts have fared.
  std::vector<int32_t> draft;
  // Token-tree drafts: the draft token each one follows (-1: the last token); empty: a chain.
  std::vector<int32_t> draft_parents;
  // The proposer's own rows for the step (lookahead's Jacobi window), scored beside the draft.
  spec::ExtraRows extra;
  spec::AcceptanceHistory spec_history;

  // Tokens still to be computed before the next sample: the prompt (or, after a preemption,
  // everything so far) during prefill, the last sampled token during decode. None while a beam
  // waits for its siblings (it is computed up to its last token): such a sequence is not
  // scheduled until the engine extends it.
  int64_t uncomputed() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
  bool decoding() const { return uncomputed() == 1 && n_computed > 0; }
  bool wants_prompt_logits() const { return next_prompt_logit < prompt_len - 1; }
  // The rope position of tokens[i]: evicted positions are gone from `tokens`, not from the
  // positions that follow them.
  int64_t position_of(int64_t i) const { return i + importance.n_evicted; }
  int64_t n_generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len + n_dropped_generated; }
};

}  // namespace lumen::engine
