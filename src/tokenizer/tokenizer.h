#pragma once
// Text <-> token ids, exactly as the model's reference tokenizer (Hugging Face / llama.cpp) does
// it. Built from a GGUF's vocabulary; the algorithm (byte-level BPE, SentencePiece BPE) is
// chosen by tokenizer.ggml.model and the pre-tokenizer by tokenizer.ggml.pre.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace lumen::gguf {
class GgufFile;
}

namespace lumen::tokenizer {

// One tokenization algorithm over plain text (no special tokens in it). The Tokenizer splits
// text around special tokens first and hands each plain segment to its TokenizerModel.
class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;
  // Appends the ids of `text`. `starts_text` is true for the first plain segment of the input
  // (and for a segment that follows a special token where the algorithm says so), which is
  // where SentencePiece adds its dummy-prefix space.
  virtual void encode(std::string_view text, bool starts_text, std::vector<int32_t>& out) const = 0;
  // The bytes token `id` stands for in decoded text (byte tokens become their byte; byte-level
  // BPE's printable code points become raw bytes; SentencePiece's U+2581 becomes a space).
  virtual std::string token_bytes(int32_t id) const = 0;
};

struct EncodeOptions {
  bool add_special = false;    // BOS/EOS as the vocabulary's add_bos/add_eos flags say
  bool parse_special = false;  // text like "<|im_start|>" becomes the control token
};

// A part of a text with its own special-token rule: chat prompts parse specials in the
// template's text but not in the messages.
struct TextPiece {
  std::string_view text;
  bool parse_special = false;
};

struct DecodeOptions {
  // Leave out control and unknown tokens (BOS, EOS, <|im_end|>...), like Hugging Face's
  // skip_special_tokens. User-defined tokens are text and always kept.
  bool skip_special = false;
  // Drop one space from the very start of the output when the vocabulary adds a dummy-prefix
  // space (SentencePiece's add_space_prefix): the space encode put there, taken back. Hugging
  // Face's Llama decoder does this (Strip(start=1) after fusing the pieces); llama.cpp does it
  // too, except that it keeps the space after a BOS it skips. Off, the bytes are as stored.
  bool strip_leading_space = false;
};

class SpecialTokenMatcher;

class Tokenizer {
 public:
  // Throws lumen::Error for a vocabulary or pre-tokenizer it cannot run exactly.
  static Tokenizer from_vocab(Vocab vocab);
  static Tokenizer from_gguf(const gguf::GgufFile& file);

  // Invalid UTF-8 in `text` is read as U+FFFD, one per maximal ill-formed subpart. Safe to
  // call from several threads at once.
  std::vector<int32_t> encode(std::string_view text, EncodeOptions options = {}) const;
  // The pieces' concatenation, tokenized as one text (plain text runs on across piece
  // boundaries) but with each piece's own rule for special tokens.
  std::vector<int32_t> encode_pieces(std::span<const TextPiece> pieces, bool add_special) const;
  // `text` as it would be tokenized in the middle of a text: no BOS, no special tokens, no
  // SentencePiece dummy prefix (structured output's forced continuations).
  std::vector<int32_t> encode_continuation(std::string_view text) const;
  // Concatenated bytes of the tokens (may end inside a UTF-8 sequence, or hold invalid UTF-8
  // where a byte token stands alone). Throws lumen::Error for an id outside the vocabulary.
  std::string decode(const std::vector<int32_t>& ids, DecodeOptions options = {}) const;
  // Throws for an id outside the vocabulary. Control and user-defined tokens give their text.
  std::string token_bytes(int32_t id) const;
  // Control and unknown tokens: what skip_special leaves out.
  bool is_special(int32_t id) const;
  // Whether decoding with DecodeOptions::strip_leading_space takes a space off.
  bool strips_leading_space() const { return vocab_->add_space_prefix; }

  const Vocab& vocab() const { return *vocab_; }

 private:
  std::shared_ptr<const Vocab> vocab_;
  std::shared_ptr<const TokenizerModel> model_;
  std::shared_ptr<const SpecialTokenMatcher> specials_;
};

}  // namespace lumen::tokenizer
