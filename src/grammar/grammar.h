#pragma once
// A context-free grammar over bytes, written in GBNF (llama.cpp's grammar notation: rules,
// alternation, groups, `*` `+` `?` `{m,n}`, character classes with ranges and negation,
// escapes, comments). Everything constrained output accepts (JSON Schema, regex, choice, a
// GBNF grammar from a client) ends up as one of these; the matcher (grammar_matcher.h) runs it.
//
// A Grammar is immutable once parsed and shared between every request that uses it.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "lumen/constraint_error.h"

namespace lumen::grammar {

// A grammar that cannot be used: a syntax error, an undefined rule, left recursion, a
// repetition that would blow up. `what()` names the problem and where it is; `offset` is the
// byte offset into the grammar text (line and column are in the message) so the server can
// return a 400 that points at it. Callers outside Lumen's internals catch it as the public
// lumen::ConstraintError.
class GrammarError : public ConstraintError {
 public:
  GrammarError(const std::string& message, size_t at) : ConstraintError(message), offset(at) {}
  size_t offset;
};

class Grammar;  // defined in grammar_rules.h (the parsed rules), opaque to users

// Parses GBNF text. `root` names the start rule. Throws GrammarError. Bounded cost: the text
// size and the size of the expanded rules (repetitions are expanded) are limited, and a
// grammar over the limits is refused, not built.
std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace lumen::grammar
