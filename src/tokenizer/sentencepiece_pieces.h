#pragma once
// What SentencePiece BPE looks up in a vocabulary, built once per model: piece text -> id for
// the pieces a merge may form, scores, the byte-fallback and unknown tokens, and which places
// in a segment no merge can ever cross (so the segment can be merged in independent chunks).
#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace lumen::tokenizer {

// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's visible stand-in for a space.
inline constexpr std::string_view kSpaceMark = "\xE2\x96\x81";
inline constexpr int32_t kNoToken = -1;

// Length of the code point at `pos` as SentencePiece BPE cuts text into symbols: the
// well-formed UTF-8 sequence there, or 1 for a byte that starts none (so bad input never
// swallows the valid characters after it).
size_t symbol_length(std::string_view text, size_t pos);

// The value of a byte token's text "<0xHH>" (SentencePieceIndex checks the form).
unsigned char byte_token_value(std::string_view text);

// Piece text -> id, as a flat open-addressing table: most lookups in the merge loop miss, and
// here a miss costs one or two cache lines instead of a walk along a bucket's nodes.
class PieceTable {
 public:
  // `texts[id]` is the text of id; `ids` the ids to index (a text listed twice: the later id).
  PieceTable(const std::vector<std::string>& texts, const std::vector<int32_t>& ids);

  int32_t find(std::string_view text) const {
    uint64_t h = hash(text);
    uint32_t tag = static_cast<uint32_t>(h >> 32) | 1;  // 0 marks an empty slot
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.tag == 0) return kNoToken;
      if (slot.tag == tag && texts_[static_cast<size_t>(slot.id)] == text) return slot.id;
    }
  }

 private:
  struct Slot {
    uint32_t tag;
    int32_t id;
  };

  // 8 bytes at a time through a multiply-xorshift mixer: fast on the short texts pieces are.
  static uint64_t hash(std::string_view text) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ text.size();
    size_t i = 0;
    for (; i + 8 <= text.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, text.data() + i, 8);
      h = mix(h ^ word);
    }
    if (i < text.size()) {
      uint64_t word = 0;
      std::memcpy(&word, text.data() + i, text.size() - i);
      h = mix(h ^ word);
    }
    return h;
  }
  static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }

  std::vector<std::string_view> texts_;  // by id; views the vocabulary
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

class SentencePieceIndex {
 public:
  // `vocab` must outlive the index (the keys view its token texts). Throws lumen::Error when
  // the score or type arrays do not match the token count, a byte token is not "<0xHH>" or
  // the unknown id is outside the vocabulary.
  explicit SentencePieceIndex(const Vocab& vocab);

  // The id of the piece spelled by `text` if a merge may form it (Normal, UserDefined, Unused
  // or Undefined, as in SentencePiece's own piece table), else kNoToken. A text listed twice
  // maps to its last id, as llama.cpp's token_to_id does.
  int32_t find(std::string_view text) const {
    return text.size() > max_piece_length_ ? kNoToken : pieces_.find(text);
  }
  float score(int32_t id) const { return scores_.empty() ? 0.0f : scores_[static_cast<size_t>(id)]; }
  bool is_unused(int32_t id) const { return types_[static_cast<size_t>(id)] == TokenType::Unused; }
  bool has_unused() const { return has_unused_; }
  int32_t byte_token(unsigned char byte) const { return byte_tokens_[byte]; }
  int32_t unknown() const { return unknown_; }

  // True when no piece has `code_point` directly before a U+2581: then no merge ever joins
  // text ending in `code_point` to text starting with U+2581, and a segment can be cut there.
  bool may_cut_between(std::string_view code_point) const;

 private:
  SentencePieceIndex(const Vocab& vocab, const std::vector<int32_t>& pieces);

  const std::vector<float>& scores_;
  const std::vector<TokenType>& types_;
  size_t max_piece_length_ = 0;
  PieceTable pieces_;
  std::array<int32_t, 256> byte_tokens_{};
  int32_t unknown_ = kNoToken;
  bool has_unused_ = false;
  // The code points some piece has directly before a U+2581 (sorted; few in real vocabularies:
  // Llama 2 and Phi-3 none, Gemma 3 '>' and U+2581 itself).
  std::vector<std::string_view> joined_to_space_;
};

}  // namespace lumen::tokenizer
