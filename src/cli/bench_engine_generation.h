#pragma once
// `lumen bench latency --speculative-config`: generation speed through the serving engine at
// batch 1, with and without speculative decoding, on the same prompt. The bare forward pass that
// bench latency otherwise times (llama-bench's way) cannot speculate, and a fair comparison runs
// both sides through the same engine. Greedy, up to n_gen tokens or the model's end of
// generation, prefix caching off (each repetition computes its prompt again); timed from the first generated token to the last, so
// the prompt's prefill is not counted, and tokens/s counts the tokens after the first.
#include <cstdint>
#include <vector>

#include "lumen/engine.h"
#include "lumen/model.h"

namespace lumen::cli {

struct EngineGenerationTiming {
  std::vector<double> ns;    // per repetition
  std::vector<double> ts;    // tokens/s per repetition
  EngineStats stats;         // the engine's counters after the last repetition (all of them)
  int64_t tokens = 0;        // generated per repetition
};

EngineGenerationTiming time_engine_generation(const Model& model, const std::vector<int32_t>& prompt, int64_t n_gen,
                                              int repetitions, const SpeculativeConfig& speculative);

}  // namespace lumen::cli
