#include "tokenizer/sentencepiece_pieces.h"

#include <algorithm>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_byte_token_text(std::string_view text) {
  return text.size() == 6 && text.substr(0, 3) == "<0x" && hex_value(text[3]) >= 0 &&
         hex_value(text[4]) >= 0 && text[5] == '>';
}

// Pieces a merge may form: SentencePiece's own piece table (its control, unknown and byte
// entries live apart and are never the result of a merge).
bool is_mergeable(TokenType type) {
  return type == TokenType::Normal || type == TokenType::UserDefined ||
         type == TokenType::Unused || type == TokenType::Undefined;
}

// The code points of `piece` that come directly before a U+2581, appended to `out`. Bytes that
// are not well-formed UTF-8 count as code points of their own, as the encoder cuts them.
void collect_joined_to_space(std::string_view piece, std::vector<std::string_view>& out) {
  size_t previous = 0, previous_length = 0;
  for (size_t pos = 0; pos < piece.size();) {
    size_t length = symbol_length(piece, pos);
    if (previous_length > 0 && piece.substr(pos, length) == kSpaceMark) {
      out.push_back(piece.substr(previous, previous_length));
    }
    previous = pos;
    previous_length = length;
    pos += length;
  }
}

}  // namespace

size_t symbol_length(std::string_view text, size_t pos) {
  return std::max<size_t>(valid_sequence_length(text, pos), 1);
}

unsigned char byte_token_value(std::string_view text) {
  return static_cast<unsigned char>(hex_value(text[3]) * 16 + hex_value(text[4]));
}

PieceTable::PieceTable(const std::vector<std::string>& texts, const std::vector<int32_t>& ids) {
  texts_.assign(texts.begin(), texts.end());
  size_t capacity = 2;
  while (capacity < 2 * ids.size()) capacity *= 2;  // at most half full: short probe runs
  slots_.assign(capacity, Slot{0, kNoToken});
  mask_ = capacity - 1;
  for (int32_t id : ids) {
    std::string_view text = texts_[static_cast<size_t>(id)];
    uint64_t h = hash(text);
    uint32_t tag = static_cast<uint32_t>(h >> 32) | 1;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.tag == 0 || (slot.tag == tag && texts_[static_cast<size_t>(slot.id)] == text)) {
        slot = Slot{tag, id};
        break;
      }
    }
  }
}

namespace {

// load_vocab checks all of this already; a Vocab can also be built by hand.
void check_vocab(const Vocab& vocab) {
  if (!vocab.scores.empty() && vocab.scores.size() != vocab.size()) {
    fail("SentencePiece vocabulary has {} scores for {} tokens", vocab.scores.size(),
         vocab.size());
  }
  if (vocab.types.size() != vocab.size()) {
    fail("SentencePiece vocabulary has {} token types for {} tokens", vocab.types.size(),
         vocab.size());
  }
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (vocab.types[i] == TokenType::Byte && !is_byte_token_text(vocab.tokens[i])) {
      fail("byte token {} is '{}', expected the form <0xHH>", i, vocab.tokens[i]);
    }
  }
  if (vocab.special.unknown && (*vocab.special.unknown < 0 ||
                                static_cast<size_t>(*vocab.special.unknown) >= vocab.size())) {
    fail("unknown token id {} is outside the {}-token vocabulary", *vocab.special.unknown,
         vocab.size());
  }
}

std::vector<int32_t> mergeable_ids(const Vocab& vocab) {
  check_vocab(vocab);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (!vocab.tokens[i].empty() && is_mergeable(vocab.types[i])) {
      ids.push_back(static_cast<int32_t>(i));
    }
  }
  return ids;
}

}  // namespace

SentencePieceIndex::SentencePieceIndex(const Vocab& vocab)
    : SentencePieceIndex(vocab, mergeable_ids(vocab)) {}

SentencePieceIndex::SentencePieceIndex(const Vocab& vocab, const std::vector<int32_t>& pieces)
    : scores_(vocab.scores), types_(vocab.types), pieces_(vocab.tokens, pieces) {
  for (int32_t id : pieces) {
    std::string_view text = vocab.tokens[static_cast<size_t>(id)];
    max_piece_length_ = std::max(max_piece_length_, text.size());
    collect_joined_to_space(text, joined_to_space_);
  }
  std::sort(joined_to_space_.begin(), joined_to_space_.end());
  joined_to_space_.erase(std::unique(joined_to_space_.begin(), joined_to_space_.end()),
                         joined_to_space_.end());

  byte_tokens_.fill(kNoToken);
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (vocab.types[i] == TokenType::Unused) has_unused_ = true;
    if (vocab.types[i] != TokenType::Byte) continue;
    int32_t& slot = byte_tokens_[byte_token_value(vocab.tokens[i])];
    if (slot == kNoToken) slot = static_cast<int32_t>(i);
  }
  if (vocab.special.unknown) {
    unknown_ = *vocab.special.unknown;
  } else {
    auto it = std::find(vocab.types.begin(), vocab.types.end(), TokenType::Unknown);
    if (it != vocab.types.end()) unknown_ = static_cast<int32_t>(it - vocab.types.begin());
  }
}

bool SentencePieceIndex::may_cut_between(std::string_view code_point) const {
  return !std::binary_search(joined_to_space_.begin(), joined_to_space_.end(), code_point);
}

}  // namespace lumen::tokenizer
