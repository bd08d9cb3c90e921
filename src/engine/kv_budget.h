#pragma once
// How many KV blocks (pages of `layout`) the engine's pool gets: the configured count, room for
// kv_cache_full_sequences sequences of max_model_len, the configured byte budget, or a share of
// the memory the pool will live in (the RAM the system reports available for the CPU, the
// device's free memory for a device backend), never more than max_num_seqs sequences of the
// longest allowed length could fill. A layout with windows gets one block more: the null block.
#include <cstdint>

#include "lumen/engine_config.h"
#include "backend/backend.h"
#include "kv/kv_layout.h"
#include "model/hparams.h"

namespace lumen::engine {

int64_t kv_blocks_for(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                      const backend::Backend& backend);

// MemAvailable from /proc/meminfo, in bytes (0 when it cannot be read).
uint64_t available_ram_bytes();

}  // namespace lumen::engine
