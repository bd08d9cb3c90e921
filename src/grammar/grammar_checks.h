#pragma once
// Checks a parsed grammar must pass before a matcher may run it.
#include <string>
#include <string_view>

#include "grammar/grammar_rules.h"

namespace lumen::grammar {

// Throws GrammarError with line and column of `offset` in `text`.
[[noreturn]] void throw_grammar_error(std::string_view text, size_t offset, const std::string& what);

// Refuses left recursion, direct or indirect (also through rules that may match nothing): a
// rule that can reach itself without consuming a character while something remains to match
// after it would grow the matcher's stacks without bound. A rule that reaches itself only as
// the last element of an alternative (`r ::= x* r | "a"` with nullable x*) is fine: the
// matcher replaces the frame (a tail call), so the stack does not grow.
void check_no_left_recursion(const Grammar& grammar, std::string_view text);

}  // namespace lumen::grammar
