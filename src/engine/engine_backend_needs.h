#pragma once
// What an engine's options ask of the backend its model runs on, beyond the model itself
// (model/backend_needs.h, checked at load): the KV cache's type and rotation, token trees,
// context shift and importance-based eviction. The engine checks it before it allocates its
// cache, so an option the backend lacks is refused at construction, never inside a step.
#include "backend/backend_needs.h"
#include "lumen/engine_config.h"
#include "lumen/kv_eviction.h"
#include "model/hparams.h"

namespace lumen::engine {

// config's speculative part already resolved (spec::resolved).
backend::BackendNeeds engine_backend_needs(const model::HParams& hp, const EngineConfig& config);
// What one request's (or the engine's) eviction policy asks: nothing when it is off.
backend::BackendNeeds kv_eviction_needs(const KvImportance& importance);

}  // namespace lumen::engine
