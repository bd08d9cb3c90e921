#pragma once
// Server-sent events as OpenAI streams them: each JSON payload on one `data:` line followed by
// a blank line, and `data: [DONE]` at the end.
#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"

namespace lumen::server {

inline std::string sse_event(const nlohmann::json& payload) { return "data: " + dump_json(payload) + "\n\n"; }

inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace lumen::server
