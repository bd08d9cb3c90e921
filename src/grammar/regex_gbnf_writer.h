#pragma once
// A regex syntax tree (regex_syntax_tree.h) written as one GBNF expression for a target: raw
// characters, or their JSON-string encoding (regex_gbnf_expression.h).
#include <string>

#include "grammar/regex_gbnf_expression.h"
#include "grammar/regex_syntax_tree.h"

namespace lumen::grammar::regex {

std::string write_regex_gbnf(const Node& node, RegexTarget target);

}  // namespace lumen::grammar::regex
