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

  // What lies below a trie node (its descendants' bytes, not its own): a walk in a state that
  // loops on all of them (inside a JSON string) takes the whole subtree without stepping
  // through it. `ascii` indexes byte_sets() (the ASCII bytes; sets are interned);
  // `non_ascii`: some byte is >= 0x80; `utf8_valid`: every path through the subtree is valid
  // UTF-8 (a token may end inside a character).
  struct ByteSet {
    uint64_t bits[2];
    bool contains(const ByteSet& other) const {
      return (other.bits[0] & ~bits[0]) == 0 && (other.bits[1] & ~bits[1]) == 0;
    }
  };
  struct Below {
    uint32_t ascii;
    bool non_ascii;
    bool utf8_valid;
  };
  const Below& below(uint32_t node) const { return below_[node]; }
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
  // The path from the root to a node, decoded as UTF-8: valid so far, and whether it ends on a
  // character boundary.
  struct Utf8Prefix {
    bool valid;
    bool boundary;
  };
  Utf8Prefix utf8_prefix(uint32_t node) const { return utf8_prefix_[node]; }
  const std::vector<int32_t>& ranks() const { return ranks_; }

 private:
  std::vector<std::string> token_bytes_;
  std::vector<int32_t> end_of_generation_;
  std::vector<bool> end_of_generation_flags_;
  std::vector<bool> grammar_token_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> ranks_;
  void summarize_subtree_bytes();

  std::vector<Below> below_;
  std::vector<Utf8Prefix> utf8_prefix_;
  std::vector<ByteSet> byte_sets_;
};

}  // namespace lumen::grammar
