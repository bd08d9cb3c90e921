#pragma once
// Python str semantics over UTF-8 bytes. Jinja templates index, slice, measure and strip strings
// by code point, and strip Python's notion of whitespace (str.isspace), so these helpers do the
// same. Every string reaching them is valid UTF-8 (render_chat checks its inputs once).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::chat {

// The largest string any operation builds, whatever the render's own (smaller) output limit:
// checked while building, so a hostile template fails with an error before memory runs out.
constexpr size_t kMaxBuiltString = size_t{64} << 20;
// lumen::Error when `bytes` passes kMaxBuiltString.
void check_built_size(size_t bytes);

// True for the code points Python's str.isspace() accepts.
bool py_isspace(char32_t cp);

// Decodes one code point at `pos` and advances it; input is assumed valid UTF-8.
char32_t utf8_next(std::string_view text, size_t& pos);
void utf8_append(std::string& out, char32_t cp);
bool utf8_valid(std::string_view text);

// Byte offset of every code point start, plus text.size() at the end.
std::vector<size_t> code_point_offsets(std::string_view text);
size_t code_point_count(std::string_view text);

// Python str.strip / lstrip / rstrip: whitespace when `chars` is empty-optional, else those chars.
std::string py_strip(std::string_view text, const std::optional<std::string>& chars, bool left,
                     bool right);

// Python str.split(sep, maxsplit) with an explicit separator (non-empty) or on whitespace runs.
std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep,
                                  int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep,
                                   int64_t maxsplit);

// ASCII-only case mapping: non-ASCII letters are left as they are (documented limitation).
// str.splitlines() for the line breaks templates meet: \n, \r and \r\n.
std::vector<std::string> py_splitlines(std::string_view text);

std::string ascii_upper(std::string_view text);
std::string ascii_lower(std::string_view text);
std::string py_capitalize(std::string_view text);
std::string py_title(std::string_view text);

// Python str.replace(old, new, count) with count < 0 meaning all.
std::string py_replace(std::string_view text, std::string_view from, std::string_view to,
                       int64_t count);

// repr() of a str: quotes chosen the way Python chooses them, control characters escaped.
std::string py_repr_string(std::string_view text);

}  // namespace lumen::chat
