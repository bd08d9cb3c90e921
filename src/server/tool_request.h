#pragma once
// OpenAI's tool-calling fields of a chat request: `tools` (functions with a JSON Schema for
// their arguments), `tool_choice` ("none", "auto", "required" or one named function) and
// `parallel_tool_calls`. The legacy `functions` / `function_call` are refused with a pointer to
// these.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/request_fields.h"

namespace lumen::server {

struct ToolFunction {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters;  // a JSON Schema (an object schema); {} when not given
};

enum class ToolChoice { None, Auto, Required, Named };

// The most calls one reply may make where a grammar writes them (Generic replies, and Hermes
// under "required" / a named function) with parallel_tool_calls: the list closes after them.
// A small model that repeats its call would otherwise write it until max_tokens and never
// finish the reply; a real reply asks for a few calls at once.
inline constexpr size_t kMaxParallelToolCalls = 8;

struct ToolRequest {
  std::vector<ToolFunction> functions;
  nlohmann::ordered_json tools;  // as the client sent them (the chat template's `tools`)
  ToolChoice choice = ToolChoice::Auto;
  std::string named;     // ToolChoice::Named: the function's name
  bool parallel = true;  // several calls in one reply (at most kMaxParallelToolCalls)

  // The functions the reply may call: all, or the named one.
  std::vector<const ToolFunction*> callable() const;
};

// nullopt when the request has no tools (or an empty list). Throws ApiError(400) naming the
// field: a malformed tool, a duplicate name, a tool_choice naming no tool, tool_choice without
// tools (other than "none"), the legacy fields.
std::optional<ToolRequest> parse_tool_request(const RequestFields& fields);

// The tools as the client ordered their keys (parse_tool_request read a nlohmann::json, which
// sorts them): the chat template renders `tools` in that order, and a parameter schema's
// property order is the order a call writes its arguments in.
void restore_tool_order(const nlohmann::ordered_json& body, ToolRequest& request);

}  // namespace lumen::server
