#pragma once
// JSON Pointer (RFC 6901) pieces the schema converter needs for $refs and for naming where in a
// schema an error is.
#include <string>

namespace lumen::grammar {

// One reference token escaped for a pointer: "~" as "~0", "/" as "~1".
std::string pointer_token(const std::string& key);
// A $ref's URI fragment with its %XX escapes decoded (malformed escapes are kept as written).
std::string percent_decode(const std::string& text);

}  // namespace lumen::grammar
