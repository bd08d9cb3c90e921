#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace lumen::tokenizer {

void SpecialTokenMatcher::Trie::insert(std::string_view text, int32_t token) {
  uint32_t node = 0;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    auto& children = nodes[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), byte,
                               [](const auto& child, unsigned char b) { return child.first < b; });
    if (it != children.end() && it->first == byte) {
      node = it->second;
      continue;
    }
    auto child = static_cast<uint32_t>(nodes.size());
    children.insert(it, {byte, child});  // `children` is not used after nodes grows below
    nodes.emplace_back();
    node = child;
  }
  // Two tokens with one text: the first id keeps it.
  if (nodes[node].token < 0) nodes[node].token = token;
  first_byte[static_cast<unsigned char>(text[0])] = true;
}

size_t SpecialTokenMatcher::Trie::longest_match(std::string_view text, size_t pos,
                                                int32_t& token) const {
  size_t best = 0;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    const auto& children = nodes[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), byte,
                               [](const auto& child, unsigned char b) { return child.first < b; });
    if (it == children.end() || it->first != byte) break;
    node = it->second;
    if (nodes[node].token >= 0) {
      best = i + 1 - pos;
      token = nodes[node].token;
    }
  }
  return best;
}

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) {
  for (size_t id = 0; id < vocab.size(); ++id) {
    const std::string& text = vocab.tokens[id];
    if (text.empty()) continue;
    TokenType type = vocab.types[id];
    auto token = static_cast<int32_t>(id);
    if (type == TokenType::UserDefined) {
      user_defined_.insert(text, token);
      all_.insert(text, token);
    } else if (type == TokenType::Control || type == TokenType::Unknown) {
      all_.insert(text, token);
    }
  }
}

std::vector<TextSegment> SpecialTokenMatcher::split(std::string_view text,
                                                    bool parse_special) const {
  return split_with(parse_special ? all_ : user_defined_, text);
}

std::vector<TextSegment> SpecialTokenMatcher::split_with(const Trie& trie, std::string_view text) {
  std::vector<TextSegment> segments;
  if (text.empty()) return segments;
  if (trie.empty()) {
    segments.push_back({text});
    return segments;
  }
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t token = -1;
    size_t length = trie.first_byte[static_cast<unsigned char>(text[pos])]
                        ? trie.longest_match(text, pos, token)
                        : 0;
    if (length == 0) {
      ++pos;
      continue;
    }
    if (pos > plain_start) segments.push_back({text.substr(plain_start, pos - plain_start)});
    segments.push_back({{}, token});
    pos += length;
    plain_start = pos;
  }
  if (plain_start < text.size()) segments.push_back({text.substr(plain_start)});
  return segments;
}

}  // namespace lumen::tokenizer
