#pragma once
// How many KV blocks the engine's pool gets: the configured byte budget, or a share of the memory
// the pool will live in (the RAM the system reports available for the CPU, the device's free
// memory for a device backend), never more than max_num_seqs sequences of the longest allowed
// length could fill.
#include <cstdint>

#include "lumen/engine_config.h"
#include "backend/backend.h"
#include "model/hparams.h"

namespace lumen::engine {

int64_t kv_blocks_for(const EngineConfig& config, const model::HParams& hp, const backend::Backend& backend);

// MemAvailable from /proc/meminfo, in bytes (0 when it cannot be read).
uint64_t available_ram_bytes();

}  // namespace lumen::engine
