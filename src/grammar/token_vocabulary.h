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

  size_t size() const { return token_bytes_.size(); }

  const std::string& token_bytes(int32_t id) const { return token_bytes_[static_cast<size_t>(id)]; }
  bool is_end_of_generation(int32_t id) const { return end_of_generation_flags_[static_cast<size_t>(id)]; }
  // A token a grammar may allow: not unusable, not end-of-generation, and not empty (an empty
  // token would let a constrained sequence run on forever without advancing).
  bool is_grammar_token(int32_t id) const { return grammar_token_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& end_of_generation() const { return end_of_generation_; }

  // The grammar tokens as a byte trie, its nodes in preorder (node 0 is the root, the empty
  // prefix). A walk skips a whole subtree (every token sharing a dead prefix) by jumping to
  // `subtree_end`. Tokens are numbered by their place in the walk (`ranks`: the ids in
  // lexicographic order of their bytes); a node's own tokens (those whose bytes end there) are
  // ranks [tokens_begin, own_tokens_end), its subtree's are [tokens_begin, subtree_tokens_end).
  struct TrieNode {
    uint32_t subtree_end;
    uint32_t tokens_begin;
    uint32_t own_tokens_end;
    uint32_t subtree_tokens_end;
    uint16_t depth;
    uint8_t byte;
  };
  const std::vector<TrieNode>& trie() const { return trie_; }

  // The bytes below a trie node (in its descendants, not its own byte), when they are all
  // ASCII: a walk in a state that loops on those bytes (inside a JSON string) takes the whole
  // subtree without stepping through it. Masks are interned: `below_ascii(node)` indexes
  // `byte_sets()`, kNotAscii when some descendant byte is >= 0x80.
  struct ByteSet {
    uint64_t bits[2];
    bool contains(const ByteSet& other) const {
      return (other.bits[0] & ~bits[0]) == 0 && (other.bits[1] & ~bits[1]) == 0;
    }
  };
  static constexpr uint32_t kNotAscii = ~0u;
  uint32_t below_ascii(uint32_t node) const { return below_ascii_[node]; }
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
  const std::vector<int32_t>& ranks() const { return ranks_; }

 private:
  std::vector<std::string> token_bytes_;
  std::vector<int32_t> end_of_generation_;
  std::vector<bool> end_of_generation_flags_;
  std::vector<bool> grammar_token_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> ranks_;
  void summarize_subtree_bytes();

  std::vector<uint32_t> below_ascii_;
  std::vector<ByteSet> byte_sets_;
};

}  // namespace lumen::grammar
