#include "server/json_body.h"

#include <algorithm>
#include <cstdint>

#include "server/api_error.h"

namespace lumen::server {

bool is_valid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07u;
    else return false;  // a continuation byte first, C0/C1 (overlong), or F5..FF
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0u) != 0x80u) return false;
      cp = (cp << 6) | (s[i + k] & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return false;
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    i += len;
  }
  return true;
}

namespace {

// The deepest nesting of arrays and objects, brackets inside strings not counted. Malformed
// input may give any number here; the parser rejects it afterwards.
int max_nesting(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if (c == ']' || c == '}') --depth;
    if (deepest > kMaxJsonDepth) return deepest;
  }
  return deepest;
}

}  // namespace

nlohmann::json parse_json_body(std::string_view body) {
  if (!is_valid_utf8(body)) throw ApiError(400, "the request body is not valid UTF-8");
  if (max_nesting(body) > kMaxJsonDepth) {
    throw ApiError(400, fmt::format("the request body nests JSON deeper than {} levels", kMaxJsonDepth));
  }
  nlohmann::json value = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!value.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return value;
}

}  // namespace lumen::server
