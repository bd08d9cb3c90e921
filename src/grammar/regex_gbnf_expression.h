#pragma once
// The regex converter's core, shared by regex_to_gbnf (the whole output matches) and the JSON
// Schema converter (a string's `pattern`, matched inside the quotes of a JSON string).
#include <cstddef>
#include <string>
#include <string_view>

namespace lumen::grammar {

enum class RegexTarget {
  kRaw,                // the regex's characters as themselves
  kJsonStringContent,  // as JSON string content: `"`, `\` and control characters escaped
};

struct RegexOptions {
  RegexTarget target = RegexTarget::kRaw;
  // JSON Schema `pattern` semantics: an end without its anchor (^ or $) may have anything
  // around the match. Otherwise the pattern must match the whole text, anchors or not.
  bool search = false;
  // Upper repetition counts past this are lowered to it (the grammar then allows fewer strings,
  // all of them still matches); lower counts past it are refused.
  size_t max_repetition = 4096;
};

// A GBNF expression (no rule references) matching the strings the pattern matches. Throws
// GrammarError with the byte offset into the pattern.
std::string regex_gbnf_expression(std::string_view pattern, const RegexOptions& options);

}  // namespace lumen::grammar
