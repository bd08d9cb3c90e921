#pragma once
// The generation fields /v1/completions and /v1/chat/completions share, read into the engine's
// SamplingParams with OpenAI's names, types and ranges (and vLLM's extensions: top_k, min_p,
// repetition_penalty, min_tokens, ignore_eos, stop_token_ids, use_beam_search, length_penalty,
// early_stopping, prompt_logprobs). The endpoints differ only in
// how log-probabilities and the token limit are asked for.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lumen/prompt_image.h"
#include "lumen/sampling_params.h"
#include "server/image_parts.h"

namespace lumen::server {

enum class Endpoint { Completions, ChatCompletions };

// What the served model allows.
struct ServingLimits {
  int64_t vocab_size = 0;
  int64_t max_model_len = 0;
  // The engine shifts contexts (--context-overflow shift, --kv-eviction): an explicit max_tokens
  // may go past the room the prompt leaves (the default still stops there).
  bool context_shift = false;
  int32_t max_n = 16;        // choices per request
  int32_t max_prompts = 64;  // prompts in one /v1/completions request
  size_t max_chat_messages = 2048;              // messages in one conversation
  size_t max_rendered_prompt_bytes = 4u << 20;  // the chat template's output
  // Tokens and log-probability entries one response may hold (output_budget.h). 4 M admits
  // one choice with 20 alternatives per token over a 128K context (2.75 M) and 16 plain
  // choices over it (2.1 M); at the measured 30-80 bytes of JSON per entry, it bounds a
  // response at a few hundred MB where the product of the per-field limits allowed tens of GB.
  int64_t max_output_records = 4'000'000;
  // /v1/embeddings: inputs per request (OpenAI's 2048), tokens per input (0: max_model_len) and
  // tokens of all inputs together (OpenAI's 300K).
  int64_t max_embedding_inputs = 2048;
  int64_t max_embedding_input_tokens = 0;
  int64_t max_embedding_request_tokens = 300'000;
  ImageLimits images = {};  // chat messages' image parts (= {}: designated initializers may leave it out)
};

struct GenerationOptions {
  SamplingParams params;  // seed: the first choice's; choice i draws from seed + i
  int32_t n = 1;
  bool max_tokens_given = false;    // false: the default (16 for completions, the rest of the context for chat)
  bool stream = false;
  bool include_usage = false;       // stream_options.include_usage
  bool prompt_logprobs_field = false;  // "prompt_logprobs" was asked for (vLLM's field in each choice)
  // Requests share cached K/V only with requests of the same salt: vLLM's `cache_salt`, mixed
  // by the route with the caller's API key (tenants never share, so cannot probe each other's
  // prompts by timing).
  uint64_t cache_salt = 0;
  // The request field params.structured_outputs came from (response_format, grammar...): the
  // `param` of the 400 when the engine finds the schema or grammar invalid.
  std::string structured_field;
  // A chat prompt's images (chat_images.h), placed in its one prompt.
  std::vector<PromptImage> images = {};
};

// The most tokens each choice may generate when `room` tokens of context are left after its
// prompt: max_tokens when given (checked against the room later), else OpenAI's 16 for
// completions and vLLM's rest of the context for chat.
int64_t max_new_tokens(const GenerationOptions& options, Endpoint endpoint, int64_t room);

// Throws ApiError(400) naming the first bad field. Token ids (logit_bias keys, stop_token_ids)
// are checked against limits.vocab_size.
GenerationOptions parse_generation_options(const nlohmann::json& body, Endpoint endpoint,
                                           const ServingLimits& limits);

}  // namespace lumen::server
