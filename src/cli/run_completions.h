#pragma once
// `lumen run` with several completions or prompt log-probabilities (--completions, --best-of,
// --beam-width, --prompt-logprobs): these need the serving engine, which forks one prompt's KV
// blocks into several sequences. Prints every completion to stdout, one after another, and
// log-probabilities (when asked for) to stderr. A SIGINT the handler absorbs aborts the request;
// what was generated until then is printed.
#include <cstdint>
#include <vector>

#include "cli/interrupt.h"
#include "engine/loaded_model.h"
#include "lumen/engine.h"

namespace lumen::cli {

void run_completions(engine::LoadedModel& model, backend::Backend& backend, const std::vector<int32_t>& prompt,
                     const SamplingParams& params, int64_t context, const InterruptHandler& interrupt);

}  // namespace lumen::cli
