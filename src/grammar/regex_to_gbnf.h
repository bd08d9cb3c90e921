#pragma once
// Regex and choice -> GBNF (vLLM's structured_outputs `regex` and `choice`).
#include <span>
#include <string>
#include <string_view>

namespace lumen::grammar {

// A practical ECMAScript-like subset: literals, escapes, `.`, classes with ranges and
// negation, \d \w \s, `*` `+` `?` `{m}` `{m,}` `{m,n}`, alternation, groups (capturing and
// non-capturing), anchors ^ and $ at the ends (the whole output must match anyway). Throws
// GrammarError with the offset into the pattern for anything else.
std::string regex_to_gbnf(std::string_view pattern);

// Exactly one of the given strings.
std::string choice_to_gbnf(std::span<const std::string> choices);

}  // namespace lumen::grammar
