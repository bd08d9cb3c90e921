#pragma once
// additionalProperties next to declared properties: an extra key may be any JSON string except
// the declared names (or the grammar could write a declared key twice, or with the wrong
// value's shape). This writes that string's body as GBNF: a trie of the names by code point,
// where each branch may leave the names at any character.
#include <optional>
#include <string>
#include <vector>

namespace lumen::grammar {

// The GBNF expression of a JSON string body (between the quotes) that is none of `names`;
// `char_rule` names the rule of one JSON string character. nullopt when a name is not valid
// UTF-8.
std::optional<std::string> key_body_excluding(const std::vector<std::string>& names, const std::string& char_rule);

}  // namespace lumen::grammar
