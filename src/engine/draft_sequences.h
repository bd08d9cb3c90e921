#pragma once
// A draft model's K/V, per sequence, in a paged cache of its own (DraftModelProposer's).
//
// Why its own cache rather than blocks in the engine's pool: the draft's K/V is a pure function
// of the tokens it was computed from, so it can be kept as a cache keyed by those tokens and
// checked against the sequence before every use. Whatever the engine did in between (rejected
// drafts, preemption by recompute or swap, a context shift, a fork) shows up as tokens that no
// longer match, and the draft drops its K/V from the first mismatch on and recomputes the rest
// ("catch-up"). Nothing in the scheduler, the block manager, swapping or the prefix cache has to
// know the draft exists, a draft can never cause a preemption of real work, and a draft that ran
// out of room simply proposes nothing. Its blocks are accounted exactly as the target's
// (kv::BlockPool, kv::SequenceKv, the same block size), prefix caching included, so the forks of
// an n > 1 request and a preempted sequence's return find their prompt's draft K/V again.
//
// Memory: the pool is sized by the factory (draft_proposers.h); when it is full, the sequences
// that did not draft in this step give up their blocks, least recently used first.
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "backend/backend.h"
#include "model/hparams.h"
#include "model/kv_cache.h"

namespace lumen::engine {

struct DraftSequence {
  DraftSequence(const kv::KvSpace& space, uint64_t cache_salt) : blocks(space, cache_salt) {}
  kv::SequenceKv blocks;
  // The tokens whose K/V `blocks` hold, positions 0.. in order.
  std::vector<int32_t> computed;
  uint64_t last_used = 0;  // the step it last drafted in (LRU eviction)
};

class DraftSequences {
 public:
  // The draft's K/V for a model of `hp` on `backend`: `n_blocks` blocks of `block_size`
  // positions, each holding one group of every layer (no sliding-window page groups: a draft's
  // sequences are short-lived, and the simplest layout is enough).
  DraftSequences(backend::Backend& backend, const model::HParams& hp, int32_t n_blocks, int32_t block_size);
  DraftSequences(const DraftSequences&) = delete;  // the sequences point at the pool
  DraftSequences& operator=(const DraftSequences&) = delete;

  model::KvCache& cache() { return cache_; }

  // Starts a step (one propose()).
  void next_step() { ++step_; }
  // The state of `sequence_id` made ready to extend `tokens`: its K/V kept for the longest
  // common prefix of what it computed and tokens[0, n_keep) (n_keep < tokens.size(), so at
  // least one token is left to compute and give logits), else adopted from the prefix cache, and
  // room reserved for `n_new` more positions after that. Null when the pool has no room even
  // after evicting the sequences not used in this step.
  DraftSequence* prepare(uint64_t sequence_id, uint64_t cache_salt, std::span<const int32_t> tokens, int64_t n_keep,
                         int64_t n_new);
  // After the step's passes: publishes its newly full blocks in the prefix cache.
  void commit(DraftSequence& seq) { seq.blocks.commit(seq.computed, static_cast<int64_t>(seq.computed.size())); }
  // Drops every sequence for which `live` is false.
  void forget_ended(const std::function<bool(uint64_t)>& live);
  // Drops everything (after a failed pass, whose K/V is unknown).
  void clear() { sequences_.clear(); }

  size_t size() const { return sequences_.size(); }
  const kv::BlockPool& pool() const { return pool_; }

 private:
  // Releases the blocks of the least recently used sequence not used in this step; false when
  // there is none.
  bool evict_one();

  model::KvCache cache_;
  kv::BlockPool pool_;
  kv::KvSpace space_;
  std::unordered_map<uint64_t, DraftSequence> sequences_;
  std::vector<kv::BlockCopy> copies_;
  uint64_t step_ = 0;
};

}  // namespace lumen::engine
