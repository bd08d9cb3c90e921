#pragma once
// A device backend's memory for the largest step, taken before the KV pool is sized.
//
// The pool takes a share of the device memory still free once the weights are loaded
// (EngineConfig::gpu_memory_utilization). A step's own memory (the activations, the matmuls'
// conversion scratch, attention's partial results, the logits rows) is allocated by the first
// step of each size and kept. Sized first, the pool would leave that memory only the share it did
// not take, and on a small device the first large step would fail inside the step, failing every
// request in it. So before the pool is sized, one forward pass of the largest step the scheduler
// can form (max_num_batched_tokens tokens, with reserved_logit_rows rows of logits) runs on a
// throwaway cache, and the pool gets its share of what is free after it (as vLLM profiles a dummy
// batch). A device too small for that step is refused here, at load, with the step's size named.
#include <cstdint>

#include "engine/loaded_model.h"
#include "lumen/engine_config.h"

namespace lumen::engine {

// Whether the engine sizes its KV pool from the device memory left free (kv_budget.h), so the
// largest step's memory must be taken first: the model on a device backend alone, no fixed KV
// size or byte budget, one process (the ranks of a parallel group would have to follow the pass),
// and a model that generates (an encoder's passes go through forward_hidden and a pool it
// borrows). A model split with the CPU (--n-gpu-layers) is not reserved for: the pass would run
// the CPU's layers over max_num_batched_tokens tokens, and every row's logits, at each start.
bool reserves_largest_step(const EngineConfig& config, const LoadedModel& model, const backend::Backend& backend,
                           bool model_parallel);

// The logits rows the pass asks: every row of a step of up to kReservedLogitRows tokens (prompt
// logprobs and draft verification ask a row for each token), else max_num_seqs of them (a decode
// step's) and at least kReservedLogitRows. Every row of a larger step would be its tokens x the
// vocabulary x 4 bytes held for good (8 192 tokens of a 128k vocabulary: 4 GiB) for the rare step
// that asks them; such a step (prompt logprobs over a chunk longer than that) takes its rows from
// the share the pool leaves.
inline constexpr int64_t kReservedLogitRows = 512;
int64_t reserved_logit_rows(const EngineConfig& config);

// Runs that pass: max_num_batched_tokens tokens of one sequence, the logits of its last
// reserved_logit_rows rows. Its cache is freed on return; its step memory stays with the backend
// and the model. The expert load counts it added are reset. Throws lumen::Error, naming the
// step, when it does not fit.
void reserve_largest_step(const EngineConfig& config, LoadedModel& model, backend::Backend& backend);

}  // namespace lumen::engine
