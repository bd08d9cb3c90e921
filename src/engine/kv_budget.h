#pragma once
// How many KV blocks (pages of `layout`) the engine's pool gets: the configured count, room for
// kv_cache_full_sequences sequences of max_model_len, the configured byte budget, or a share of
// the memory the pool will live in (the RAM the system reports available for the CPU, the
// device's free memory for a device backend), never more than max_num_seqs sequences of the
// longest allowed length could fill. A layout with windows gets one block more: the null block.
// A state-space model's recurrent states come out of the same budget (cache_sizes_for).
#include <cstdint>

#include "lumen/engine_config.h"
#include "backend/backend.h"
#include "kv/kv_layout.h"
#include "model/backend_split.h"
#include "model/hparams.h"

namespace lumen::engine {

// What the engine's caches get: KV blocks, and a state-space model's recurrent-state slots (0
// for a model without).
struct CacheSizes {
  int64_t kv_blocks = 0;
  int64_t state_slots = 0;
  // The state prefix cache's snapshots (engine/state_snapshots.h), one slot's bytes each, out of
  // the same budget (state_prefix_cache_bytes; 0: none).
  int64_t state_snapshots = 0;
};

// The KV blocks as kv_blocks_for says, and for a state-space model the state slots, out of the
// same memory budget: a slot (one sequence's state, model::StateCache::bytes_per_slot) comes
// with room in the KV for one sequence of the longest length, up to max_num_seqs slots, and the
// KV gets what the slots leave. With a fixed KV size (num_kv_blocks, kv_cache_full_sequences)
// the slots get what the budget has beyond it. Throws lumen::Error when not one state fits.
// With an active split (model/backend_split.h): each backend's share of the pages out of its own
// memory (kv_blocks_for), and the pool as many blocks as the tighter one holds.
CacheSizes cache_sizes_for(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                           const backend::Backend& backend, const model::BackendSplit& split = {});

int64_t kv_blocks_for(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                      const backend::Backend& backend);

// The bytes the caches may take: kv_cache_bytes, else the configured share of the free device
// memory (a device backend) or of the RAM the system reports available.
uint64_t cache_budget_bytes(const EngineConfig& config, const backend::Backend& backend);

}  // namespace lumen::engine
