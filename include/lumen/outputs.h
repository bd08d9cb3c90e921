#pragma once
// What a request yields: tokens as they are sampled (with their log-probabilities), then why
// it ended.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lumen/finish_reason.h"

namespace lumen {

struct TokenAlternative {
  int32_t token;
  float logprob;
};

struct GeneratedToken {
  int32_t token = 0;
  float logprob = 0.0f;               // NaN unless logprobs were asked for
  std::vector<TokenAlternative> top;  // the top-k alternatives, when logprobs were asked for
  // The text this token makes safe to show: whole UTF-8, with a stop string and anything after
  // it never included (so it may be empty while a character or a possible stop string is held
  // back; the last token of a request carries whatever was still held).
  std::string text;
};

// One prompt token's log-probability under the model given the tokens before it (raw model
// logits: no bias, penalty or temperature), with the top alternatives asked for. The first
// prompt token has none (NaN, no alternatives).
struct PromptLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<TokenAlternative> top;
};

// What RequestHandle::next hands over: the tokens made since the last call, and, in the last
// chunk, finished = true and the finish reason.
struct StreamChunk {
  // With prompt_logprobs: one entry per prompt token, in the first chunk only (the prompt is
  // computed before the first token is sampled).
  std::vector<PromptLogprob> prompt_logprobs;
  // In the first chunk: seconds from add_request to the first step that computed any of the
  // request's tokens (its time in the queue); NaN in the others.
  double queue_seconds = std::numeric_limits<double>::quiet_NaN();
  std::vector<GeneratedToken> tokens;
  bool finished = false;
  FinishReason finish_reason = FinishReason::Abort;  // meaningful when finished
  std::string error;  // with FinishReason::Error: what failed
};

struct GenerationResult {
  uint64_t request_id = 0;
  int32_t index = 0;  // which of the request's n completions
  std::vector<PromptLogprob> prompt_logprobs;
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenAlternative>> top_logprobs;  // per token: the alternatives asked for
  FinishReason finish = FinishReason::Abort;
  std::string error;  // with FinishReason::Error: what failed
};

}  // namespace lumen
