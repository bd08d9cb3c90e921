#pragma once
// A device backend's memory for the largest step, taken before the KV pool is sized.
//
// The pool takes a share of the device memory still free once the weights are loaded
// (EngineConfig::gpu_memory_utilization). A step's own memory (the activations, the matmuls'
// conversion scratch, attention's partial results, the logits rows) is allocated by the first
// step of each size and kept. Sized first, the pool would leave that memory only the share it did
// not take, and on a small device the first large step would fail inside the step, failing every
// request in it. So before the pool is sized, one forward pass of the largest step the scheduler
// can form (max_num_batched_tokens tokens, every row's logits: what prompt logprobs and draft
// verification ask) runs on a throwaway cache, and the pool gets its share of what is free after
// it (as vLLM profiles a dummy batch). A device too small for that step is refused here, at load,
// with the step's size named.
#include <span>

#include "engine/loaded_model.h"
#include "lumen/engine_config.h"

namespace lumen::engine {

// Whether the engine sizes its KV pool from the device memory left free (kv_budget.h), so the
// largest step's memory must be taken first: a device among `backends` (the model's own, and the
// second of a model split over two), no fixed KV size or byte budget,
// one process (the ranks of a parallel group would have to follow the pass), and a model that
// generates (an encoder's passes go through forward_hidden and a pool it borrows).
bool reserves_largest_step(const EngineConfig& config, const LoadedModel& model,
                           std::span<const backend::Backend* const> backends, bool model_parallel);

// Runs that pass on the model's own backend (a split model's pass crosses to the second one):
// max_num_batched_tokens tokens of one sequence, every row's logits. Its cache
// is freed on return, its step memory stays with the backend and the model. The expert load
// counts it added are reset. Throws lumen::Error, naming the step, when it does not fit.
void reserve_largest_step(const EngineConfig& config, LoadedModel& model, backend::Backend& backend);

}  // namespace lumen::engine
