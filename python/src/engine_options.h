#pragma once
// The keyword options of lumen.LLM and lumen.AsyncEngine (vLLM's engine argument names where
// vLLM has the option) read into Lumen's ModelOptions and EngineConfig.
#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>

#include "lumen/engine_config.h"
#include "lumen/model.h"

namespace lumen::python {

struct EngineOptions {
  ModelOptions model;
  EngineConfig engine;
  // vLLM's engine seed: a request without its own seed draws from seed + k, k counting the
  // requests (reproducible runs); absent, such requests are seeded at random.
  std::optional<uint64_t> seed;
};

// Every option's name, in the order the documentation lists them (lumen.LLM checks keyword
// names against it before the engine is made).
// clang-format off
inline constexpr const char* kEngineOptionNames[] = {
    "max_num_seqs", "max_num_batched_tokens", "max_model_len", "block_size", "enable_prefix_caching",
    "kv_cache_dtype", "kv_cache_rotation", "kv_cache_memory_bytes", "gpu_memory_utilization", "swap_space",
    "scheduling_policy", "preemption_mode", "speculative_config", "max_itl_ms", "seed", "threads", "device",
    "chat_template", "mmproj"};
// clang-format on

// A seed as Python gives it: an int from 0 to 2^64-1 is the seed; -1 (as the CLI's --seed and
// the server's "seed") or None asks for a random one (nullopt). Anything else is a TypeError
// (not an int) or a lumen::Error naming `what` (out of range).
std::optional<uint64_t> seed_value(const char* what, nanobind::handle value);

// Throws TypeError naming an unknown option or one of the wrong type, and lumen::Error for a
// value out of range.
EngineOptions engine_options_from(const nanobind::dict& options);

}  // namespace lumen::python
