#pragma once
// A Generic tool reply ({"tool_calls": [...]} or {"content": "..."}, tool_call_format.h) read as
// far as it got: a reply cut by max_tokens (or still streaming) is a prefix of that JSON, which
// no JSON parser takes. Its finished calls and the text of its content so far are still the
// reply's meaning; the half-written wrapper is not, and never reaches the client as content.
// Everything here reads each byte a bounded number of times: a reply may be millions of tokens
// long (max_tokens with context shift), and streaming must not cost its square.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lumen::server {

struct GenericReplyPrefix {
  enum class Kind { Unknown, Calls, Content };
  Kind kind = Kind::Unknown;                  // which member the reply opened (Unknown: not yet)
  size_t content_start = 0;                   // Content: where the string's body begins in the text
  std::vector<nlohmann::ordered_json> calls;  // Calls: each call object whose JSON is complete
  std::string content;                        // Content: the string's text so far, unescaped
};

// Whitespace between the JSON's tokens is allowed. A string is cut before an escape that is
// not complete, so `content` only grows as `text` does. With `opening_only`, stops once the
// kind (and content_start) is known: calls and content are left empty.
GenericReplyPrefix read_generic_reply_prefix(std::string_view text, bool opening_only = false);

// The part of a JSON string's body (after its opening quote) that holds only whole escapes and
// no closing quote: its length. `closed`: the closing quote follows it.
size_t whole_string_run(std::string_view body, bool& closed);

// The text of such a run, escapes resolved ("" if it is not one).
std::string unescape_string_run(std::string_view run);

}  // namespace lumen::server
