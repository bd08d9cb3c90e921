#pragma once
// Splits a template into tokens the way jinja2's lexer does with the settings Hugging Face
// renders chat templates with: trim_blocks (the newline right after a block or comment tag is
// dropped), lstrip_blocks (spaces and tabs before a block or comment tag on its own line are
// dropped), `-` / `+` whitespace control on tags, one trailing newline of the template dropped
// (keep_trailing_newline=False), and \r\n / \r read as \n.
#include <string>
#include <string_view>
#include <vector>

namespace lumen::chat {

enum class TokenKind {
  Data,        // literal template text
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // value already unescaped
  Integer,     // digits, underscores removed
  Float,       // text as written, underscores removed
  Operator,
  End,
};

struct Token {
  TokenKind kind;
  std::string text;
  int line;
};

std::vector<Token> tokenize_template(std::string_view source);

}  // namespace lumen::chat
