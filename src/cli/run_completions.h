#pragma once
// `lumen run` with several completions or prompt log-probabilities (--completions, --best-of,
// --beam-width, --logprobs, --prompt-logprobs): the engine forks one prompt's KV blocks into
// several sequences. Prints every completion to stdout, one after another, and
// log-probabilities (when asked for) to stderr. A SIGINT the handler absorbs aborts the request;
// what was generated until then is printed.
#include <cstdint>
#include <vector>

#include "cli/interrupt.h"
#include "lumen/engine.h"
#include "lumen/model.h"

namespace lumen::cli {

void run_completions(Engine& engine, const Model& model, const std::vector<int32_t>& prompt,
                     const SamplingParams& params, const InterruptHandler& interrupt);

}  // namespace lumen::cli
