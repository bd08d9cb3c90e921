#include "cli/bench_engine_generation.h"

#include <chrono>

#include "cli/stream_completion.h"
#include "util/error.h"

namespace lumen::cli {

EngineGenerationTiming time_engine_generation(const Model& model, const std::vector<int32_t>& prompt, int64_t n_gen,
                                              int repetitions, const SpeculativeConfig& speculative) {
  using Clock = std::chrono::steady_clock;
  const auto context = static_cast<int64_t>(prompt.size()) + n_gen + 1;
  if (context > model.info().context_length) {
    fail("the prompt ({} tokens) and {} generated tokens exceed the model's context of {}", prompt.size(), n_gen,
         model.info().context_length);
  }
  EngineConfig config = single_user_config(context, 1);
  config.enable_prefix_caching = false;
  config.speculative = speculative;
  Engine engine(model, config);
  SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = n_gen;
  // The answer a user would get: it ends at the model's end of generation (the same tokens with
  // and without speculation, greedy being lossless). Past it, a small model tends to loop, which
  // prompt lookup predicts too easily to measure anything.
  params.ignore_eos = false;
  EngineGenerationTiming timing;
  // One warm-up, as llama-bench does, then the timed repetitions.
  for (int r = -1; r < repetitions; ++r) {
    RequestHandle handle = engine.add_request(prompt, params);
    Clock::time_point first{};
    int64_t tokens = 0;
    StreamChunk chunk;
    for (bool finished = false; !finished;) {
      engine.step();
      while (!finished && handle.try_next(chunk)) {
        if (tokens == 0 && !chunk.tokens.empty()) first = Clock::now();
        tokens += static_cast<int64_t>(chunk.tokens.size());
        finished = chunk.finished;
        if (finished && chunk.finish_reason == FinishReason::Error) fail("the generation failed: {}", chunk.error);
      }
    }
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - first).count();
    if (r < 0) continue;
    timing.ns.push_back(ns);
    timing.ts.push_back(tokens > 1 && ns > 0 ? 1e9 * static_cast<double>(tokens - 1) / ns : 0.0);
    timing.tokens = tokens;
  }
  timing.stats = engine.stats();
  return timing;
}

}  // namespace lumen::cli
