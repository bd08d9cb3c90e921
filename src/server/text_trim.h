#pragma once
// The whitespace trim the tool-call parsers share (tool_call_format.cc, harmony_tool_calls.cc).
#include <string>
#include <string_view>

namespace lumen::server {

// `text` without leading and trailing spaces, tabs and line breaks.
inline std::string trimmed(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace lumen::server
