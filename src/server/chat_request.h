#pragma once
// POST /v1/chat/completions: the conversation, checked message by message and rendered with the
// model's chat template into prompt tokens (message text never becomes control tokens), plus
// the shared generation options.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "lumen/model.h"
#include "server/image_parts.h"
#include "server/sampling_request.h"
#include "server/tool_call_format.h"
#include "server/tool_request.h"

namespace lumen::server {

struct ChatRequest {
  nlohmann::ordered_json messages;  // checked (parse_messages); prepare_tool_calling may rewrite them
  std::vector<int32_t> prompt;      // rendered: empty until render_chat_prompt runs
  GenerationOptions options;
  std::optional<ToolRequest> tools;  // `tools`, `tool_choice`, `parallel_tool_calls`
  ToolCallFormat tool_format = ToolCallFormat::Generic;  // set by prepare_tool_calling
  std::optional<nlohmann::ordered_json> template_tools;  // the chat template's `tools`
  // Set by prepare_tool_calling: the reply's text goes through parse_tool_reply (it may call
  // tools, or Generic wrapped it in its JSON).
  bool tool_reply_parsed = false;
  // The images of the user messages, in order (the messages' content then lists parts).
  std::vector<ImagePart> images;
};

// The conversation in the template's terms: a non-empty list of {"role", "content"} objects
// whose content is a string, a list of text parts (joined with newlines) or, for an assistant
// turn, null. Throws ApiError(400) for anything else. With `images`, a user message may also hold
// image parts (image_parts.h, within image_limits), appended to *images in order; its content is
// then the list of parts ({"type": "text", "text"} and {"type": "image"}).
nlohmann::ordered_json parse_messages(const nlohmann::json& body,
                                      size_t max_messages = ServingLimits{}.max_chat_messages,
                                      const ImageLimits* image_limits = nullptr,
                                      std::vector<ImagePart>* images = nullptr);

// Renders `messages` (from parse_messages) with the model's chat template into prompt tokens
// (Model::chat_prompt: BOS first when the model wants one). `body` supplies
// add_generation_prompt and chat_template_kwargs; `tools` is the template's `tools` variable.
// A template that refuses the conversation (raise_exception) is an ApiError(400); one that
// fails on it, a 500.
std::vector<int32_t> render_chat_prompt(const nlohmann::ordered_json& messages, const nlohmann::json& body,
                                        const Model& model, size_t max_rendered_bytes,
                                        const std::optional<nlohmann::ordered_json>& tools);

// Tool calling's part of a chat request, which needs the model: the call format its template
// speaks, the conversation rewritten for it, and the constraint on the reply (a 400 when the
// request constrains the output another way too). Nothing when the request has no tools.
void prepare_tool_calling(ChatRequest& request, const Model& model);

// Checks every field and reads the messages and generation options, without rendering: the
// route renders only once the request holds admission places (routes_generate.cc).
ChatRequest read_chat_request(const nlohmann::json& body, const ServingLimits& limits);

// Puts back the client's key order where it matters (a JSON schema's properties, the tools)
// from the raw body: nlohmann::json sorted them. Before prepare_tool_calling.
void restore_declared_order(std::string_view raw_body, ChatRequest& request);

// read_chat_request, prepare_tool_calling, then render_chat_prompt.
ChatRequest parse_chat_request(const nlohmann::json& body, const Model& model, const ServingLimits& limits);

}  // namespace lumen::server
