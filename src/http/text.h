#pragma once
// The two string helpers every HTTP header rule needs: header names, schemes and host names
// compare case-insensitively, and field values may carry optional whitespace (RFC 9110 5.6.3).
#include <string>
#include <string_view>

namespace lumen::http {

// ASCII lower case (header values are ASCII; no locale applies).
std::string lower(std::string_view text);
// Without leading and trailing spaces and tabs.
std::string_view trim(std::string_view text);

}  // namespace lumen::http
