#include "grammar/json_key_exclusion.h"

#include <cstdint>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "grammar/gbnf_writer.h"

namespace lumen::grammar {

namespace {

// Trie of the declared property names (by code point), to write a key that is none of them.
struct KeyTrie {
  std::map<uint32_t, KeyTrie> children;
  bool terminal = false;
};

bool json_escaped(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

// How a code point appears inside a JSON string as a serializer writes it.
std::string json_encoding(uint32_t cp) {
  std::string out;
  if (json_escaped(cp)) {
    nlohmann::json text = std::string(1, static_cast<char>(cp));
    const std::string dumped = text.dump();
    return dumped.substr(1, dumped.size() - 2);
  }
  append_utf8(out, cp);
  return out;
}

}  // namespace

std::optional<std::string> key_body_excluding(const std::vector<std::string>& names, const std::string& char_rule) {
  KeyTrie trie;
  for (const auto& key : names) {
    KeyTrie* node = &trie;
    size_t pos = 0;
    while (pos < key.size()) {
      uint32_t cp;
      if (!decode_utf8(key, pos, cp)) return std::nullopt;
      node = &node->children[cp];
    }
    node->terminal = true;
  }
  const std::string rest = char_rule + "*";
  std::function<std::string(const KeyTrie&)> write = [&](const KeyTrie& node) {
    CodePointRanges excluded = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    std::string alternatives;
    for (const auto& [cp, child] : node.children) {
      excluded.emplace_back(cp, cp);
      alternatives += gbnf_literal(json_encoding(cp)) + " " + write(child) + " | ";
    }
    alternatives += gbnf_char_class(complement_ranges(excluded)) + " " + rest;
    return "(" + alternatives + ")" + (node.terminal ? "" : "?");
  };
  return write(trie);
}

}  // namespace lumen::grammar
