#pragma once
// Finds added tokens (control, unknown, user-defined) in text before the tokenization model
// sees it. User-defined tokens are always matched; control and unknown tokens only when the
// caller asks (parse_special), so text a user sends never turns into a control token by
// accident. This is llama.cpp's rule, and Hugging Face's for split_special_tokens=True.
// Where matches overlap, the leftmost wins and, among those starting there, the longest
// (Hugging Face's added-vocabulary matcher, an Aho-Corasick in leftmost-longest mode).
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace lumen::tokenizer {

struct TextSegment {
  std::string_view text;  // plain text for the model (empty when this is a token)
  int32_t token = -1;     // the added token matched here, or -1
  bool is_token() const { return token >= 0; }
};

class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Cuts `text` into plain-text segments and matched tokens, in order. Never yields an empty
  // plain segment.
  std::vector<TextSegment> split(std::string_view text, bool parse_special) const;

 private:
  // A byte trie of the token texts; one for user-defined tokens alone, one for all of them.
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, uint32_t>> children;  // sorted by byte
      int32_t token = -1;
    };
    std::vector<Node> nodes{Node{}};
    bool first_byte[256] = {};

    void insert(std::string_view text, int32_t token);
    // Length of the longest token that starts at `pos` (0 if none); its id in `token`.
    size_t longest_match(std::string_view text, size_t pos, int32_t& token) const;
    bool empty() const { return nodes.size() == 1; }
  };

  static std::vector<TextSegment> split_with(const Trie& trie, std::string_view text);

  Trie user_defined_;
  Trie all_;
};

}  // namespace lumen::tokenizer
