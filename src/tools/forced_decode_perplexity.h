#pragma once
// Perplexity scored token by token through the engine (`lumen perplexity --forced-decode`), so
// that KV eviction (SnapKV, H2O, StreamingLLM's sinks + window) acts on the scored tokens as it
// acts on a generation. The windows and scored positions are the one-pass mode's
// (perplexity.h): for each window of n_ctx tokens (BOS first), positions 0 .. n_ctx/2 are the
// prompt, prefilled as any prompt is (SnapKV selects from it, with its observation window at
// its end), and tokens n_ctx/2 + 1 .. n_ctx - 1 are fed one per decode step as forced tokens:
// the row that predicts each is scored (-log p of the text's token under the model's raw
// logits) and the token is then made the greedy choice, so the sequence continues with the
// text's token whatever the model preferred. With no eviction this is the one-pass
// perplexity computed the slow way (its tests hold it to that).
//
// Cost: one decode step per scored token, with up to `in_flight` windows decoding side by side
// in one batch; memory: in_flight sequences of n_ctx positions at most (whatever the eviction
// keeps is less), and the windows' prompts waiting in the queue.
#include <cstdint>
#include <span>

#include "lumen/engine_config.h"
#include "lumen/model.h"
#include "tools/perplexity.h"

namespace lumen::tools {

struct ForcedDecodeOptions {
  // The eviction the engine applies to every window: kv_importance (SnapKV, H2O), or
  // context_keep_tokens + kv_window_tokens (StreamingLLM); nothing else of it is read.
  EngineConfig eviction;
  int64_t in_flight = 8;  // windows decoding at once (>= 1)
};

// Throws lumen::Error as compute_perplexity does, or when the engine refuses the eviction for
// this model, or a window's output is not its forced tokens.
PerplexityResult compute_forced_decode_perplexity(const Model& model, std::span<const int32_t> tokens,
                                                  const PerplexityOptions& options, const ForcedDecodeOptions& forced,
                                                  const ProgressFn& progress = {});

}  // namespace lumen::tools
