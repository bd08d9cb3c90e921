#pragma once
// The body of a POST request, checked before anything reads it: well-formed UTF-8, JSON nested
// no deeper than a limit (a body of a million '[' must not exhaust a stack anywhere later), and
// a JSON object. Anything else is a 400.
#include <nlohmann/json.hpp>
#include <string_view>

namespace lumen::server {

inline constexpr int kMaxJsonDepth = 64;

// Whether `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Throws ApiError(400) for invalid UTF-8, JSON nested deeper than kMaxJsonDepth, malformed
// JSON, or a value that is not an object.
nlohmann::json parse_json_body(std::string_view body);

}  // namespace lumen::server
