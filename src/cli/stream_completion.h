#pragma once
// `lumen run` and `lumen chat` generate through lumen::Engine, as the server does: the engine
// samples, checks stops and stop strings and detokenizes; these commands only drive it on their
// own thread and print what each step made. One user, so the engine is sized for one sequence
// (or the few of one request) over the context.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/interrupt.h"
#include "lumen/engine.h"

namespace lumen::cli {

// An engine for one user: max_model_len = context, KV blocks for `sequences` sequences of that
// length (the prefix cache keeps a chat's conversation between turns in them).
EngineConfig single_user_config(int64_t context, int32_t sequences);

struct StreamedCompletion {
  std::vector<int32_t> tokens;  // every generated token, an ending end-of-generation token too
  std::string text;             // what was shown
  FinishReason finish = FinishReason::Abort;
  double first_token_seconds = 0;  // from submitting to the first token (the prompt's time)
  double total_seconds = 0;
};

// Submits one completion and steps the engine until it ends, handing each piece of text to
// `show` as soon as it is safe to show (whole characters, never a stop string). A SIGINT the
// handler absorbed aborts it; what came before stays shown. Throws lumen::Error when the
// engine refuses the request or fails on it.
StreamedCompletion stream_completion(Engine& engine, std::vector<int32_t> prompt, const SamplingParams& params,
                                     const InterruptHandler& interrupt,
                                     const std::function<void(const std::string&)>& show,
                                     std::vector<PromptImage> images = {});

}  // namespace lumen::cli
