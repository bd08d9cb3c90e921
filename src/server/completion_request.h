#pragma once
// POST /v1/completions: the prompt in any of OpenAI's four forms (a string, a list of strings,
// a list of token ids, a list of such lists) plus the shared generation options.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/sampling_request.h"
#include "lumen/model.h"

namespace lumen::server {

struct CompletionRequest {
  std::vector<std::vector<int32_t>> prompts;  // one entry per prompt, each non-empty
  std::vector<std::string> prompt_texts;      // each prompt as text (for echo): given, or decoded ids
  GenerationOptions options;
  bool echo = false;  // the prompt's text is put before each choice's text
};

// Throws ApiError(400) for a missing, empty or malformed prompt, token ids outside the
// vocabulary, more than limits.max_prompts prompts, or a bad generation field. Text prompts
// are tokenized with the vocabulary's BOS/EOS rule; control tokens written in the text count
// (the raw completions API lets a caller build their own chat format).
CompletionRequest parse_completion_request(const nlohmann::json& body, const Model& model,
                                           const ServingLimits& limits);

}  // namespace lumen::server
