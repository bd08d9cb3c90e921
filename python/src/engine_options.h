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

// Throws TypeError naming an unknown option or one of the wrong type, and lumen::Error for a
// value out of range.
EngineOptions engine_options_from(const nanobind::dict& options);

}  // namespace lumen::python
