#pragma once
// The model's vocabulary as a grammar sees it: the bytes each token adds to the text, and
// which tokens end generation. Built once per loaded model and shared by every compiled
// grammar for that model.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace lumen::grammar {

class TokenVocabulary {
 public:
  // `token_bytes[id]`: what token `id` appends to the generated text (Tokenizer::token_bytes).
  // `unusable[id]` (may be empty = none): tokens a grammar never allows (control and special
  // tokens: a client's grammar speaks plain text). `end_of_generation`: the ids that end a
  // sequence; a grammar allows them exactly where it may end.
  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<bool> unusable,
                  std::vector<int32_t> end_of_generation);

  size_t size() const;
  // ... (the implementation adds what the mask engine needs: a byte trie of the tokens,
  // sorted order, etc.)
};

}  // namespace lumen::grammar
