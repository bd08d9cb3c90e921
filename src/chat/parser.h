#pragma once
// Builds the AST from the token stream, following jinja2's grammar and operator precedence:
// conditional expression < or < and < not < comparisons (incl. in / not in) < + - < ~ < * / // %
// < ** < unary - + < postfix (.attr, [item], call) with filters (|) and tests (is) bound to the
// operand before them. Anything outside the supported subset is an error naming the line.
#include <string_view>

#include "chat/ast.h"

namespace lumen::chat {

Body parse_template(std::string_view source);

}  // namespace lumen::chat
