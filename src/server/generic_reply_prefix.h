#pragma once
// A Generic tool reply ({"tool_calls": [...]} or {"content": "..."}, tool_call_format.h) read as
// far as it got: a reply cut by max_tokens (or still streaming) is a prefix of that JSON, which
// no JSON parser takes. Its finished calls and the text of its content so far are still the
// reply's meaning; the half-written wrapper is not, and never reaches the client as content.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lumen::server {

struct GenericReplyPrefix {
  enum class Kind { Unknown, Calls, Content };
  Kind kind = Kind::Unknown;                  // which member the reply opened (Unknown: not yet)
  std::vector<nlohmann::ordered_json> calls;  // Calls: each call object whose JSON is complete
  std::string content;                        // Content: the string's text so far, unescaped
};

// Whitespace between the JSON's tokens is allowed. A string is cut before an escape that is
// not complete, so `content` only grows as `text` does.
GenericReplyPrefix read_generic_reply_prefix(std::string_view text);

}  // namespace lumen::server
