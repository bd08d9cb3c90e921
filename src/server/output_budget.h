#pragma once
// How much one request may make the server write. Each factor of a response's size has its own
// limit (prompts, choices, max_tokens, log-probability alternatives), but their product does
// not: 64 prompts x 16 choices x an echoed 2000-token prompt x 21 prompt log-probabilities
// is 43 million entries, gigabytes of JSON built in memory before the first byte is sent. So
// the request's worst case is counted, before it takes admission places (or, for chat, right
// after the prompt is rendered), and refused with a 400 naming the field that weighs most.
//
// A record is one token of text or one log-probability entry (the chosen token's or an
// alternative's). Per prompt of P tokens, with n choices and `width` sequences run:
//   prompt:    n x P x (1 + prompt alternatives)  for echo (the text, or its log-probabilities)
//                                                 and again for vLLM's prompt_logprobs field
//   generated: width x max_tokens x (1 + alternatives when logprobs are asked for)
// max_tokens is the request's, or its default (16; for chat the rest of the context): the
// budget bounds the worst case, so a client that wants long outputs with many alternatives
// says how long.
#include <cstdint>
#include <string>
#include <vector>

#include "server/sampling_request.h"

namespace lumen::server {

struct OutputEstimate {
  int64_t prompt_records = 0;     // echoed prompts and prompt log-probabilities
  int64_t generated_records = 0;  // generated tokens and their log-probabilities
  std::string dominant_param;     // the field whose value weighs most in the larger part
  int64_t total() const { return prompt_records + generated_records; }
};

// `prompt_lengths`: tokens of each prompt; `echo`: /v1/completions' echo.
OutputEstimate estimate_output(const std::vector<int64_t>& prompt_lengths, const GenerationOptions& options,
                               Endpoint endpoint, bool echo, int64_t max_model_len);

// Throws ApiError(400) naming estimate.dominant_param when the estimate exceeds `limit`.
void check_output_budget(const OutputEstimate& estimate, int64_t limit);

}  // namespace lumen::server
