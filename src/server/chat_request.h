#pragma once
// POST /v1/chat/completions: the conversation, checked message by message and rendered with the
// model's chat template into prompt tokens (message text never becomes control tokens), plus
// the shared generation options.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "lumen/model.h"
#include "server/sampling_request.h"

namespace lumen::server {

struct ChatRequest {
  nlohmann::ordered_json messages;  // checked (parse_messages)
  std::vector<int32_t> prompt;      // rendered: empty until render_chat_prompt runs
  GenerationOptions options;
};

// The conversation in the template's terms: a non-empty list of {"role", "content"} objects
// whose content is a string, a list of text parts (joined with newlines) or, for an assistant
// turn, null. Throws ApiError(400) for anything else.
nlohmann::ordered_json parse_messages(const nlohmann::json& body,
                                      size_t max_messages = ServingLimits{}.max_chat_messages);

// Renders `messages` (from parse_messages) with the model's chat template into prompt tokens
// (Model::chat_prompt: BOS first when the model wants one). `body` supplies
// add_generation_prompt, tools and chat_template_kwargs. A template that refuses the
// conversation (raise_exception) is an ApiError(400); one that fails on it, a 500.
std::vector<int32_t> render_chat_prompt(const nlohmann::ordered_json& messages, const nlohmann::json& body,
                                        const Model& model,
                                        size_t max_rendered_bytes = ServingLimits{}.max_rendered_prompt_bytes);

// Checks every field and reads the messages and generation options, without rendering: the
// route renders only once the request holds admission places (routes_generate.cc).
ChatRequest read_chat_request(const nlohmann::json& body, const ServingLimits& limits);

// read_chat_request, then render_chat_prompt.
ChatRequest parse_chat_request(const nlohmann::json& body, const Model& model, const ServingLimits& limits);

}  // namespace lumen::server
