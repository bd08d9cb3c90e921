#pragma once
// Making the proposer a speculative config asks for, where it needs the target model: a draft
// model (its file loaded on the target's backend, its vocabulary checked against the target's)
// or layer skip (a view of the target's first layers). The n-gram proposer needs nothing of the
// target and comes from spec::make_proposer; so does lookahead, once the backend and the model are
// checked to take its tree attention mask.
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "engine/loaded_model.h"
#include "lumen/engine_config.h"
#include "spec/proposer.h"

namespace lumen::engine {

// nullptr when speculation is off. `config` is resolved; the draft's K/V gets `n_blocks` blocks
// of `block_size` positions (the target's pool: the draft can hold whatever the target holds).
// Throws lumen::Error naming the problem: a draft file that does not load, a vocabulary that is
// not the target's, num_layers not below the target's layer count, lookahead on a backend
// without tree attention or a model with sliding-window layers.
std::unique_ptr<spec::Proposer> make_proposer(const SpeculativeConfig& config, const LoadedModel& target,
                                              backend::Backend& backend, int32_t n_blocks, int32_t block_size);

}  // namespace lumen::engine
