#include "tokenizer/tokenizer.h"

#include "gguf/file.h"
#include "tokenizer/model_factory.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

void check_special_id(bool wanted, const std::optional<int32_t>& id, const char* flag,
                      const char* key) {
  if (wanted && !id) fail("{} is set, but the vocabulary has no {}", flag, key);
}

}  // namespace

Tokenizer Tokenizer::from_vocab(Vocab vocab) {
  if (vocab.kind == VocabKind::None || vocab.tokens.empty()) {
    fail("the model has no vocabulary to tokenize with (tokenizer.ggml.model '{}')",
         vocab.model_name);
  }
  if (vocab.types.size() != vocab.size()) {
    fail("the vocabulary has {} token types for {} tokens", vocab.types.size(), vocab.size());
  }
  check_special_id(vocab.special.add_bos, vocab.special.bos, "tokenizer.ggml.add_bos_token",
                   "BOS token (tokenizer.ggml.bos_token_id)");
  check_special_id(vocab.special.add_eos, vocab.special.eos, "tokenizer.ggml.add_eos_token",
                   "EOS token (tokenizer.ggml.eos_token_id)");
  Tokenizer tokenizer;
  tokenizer.vocab_ = std::make_shared<const Vocab>(std::move(vocab));
  tokenizer.model_ = make_tokenizer_model(tokenizer.vocab_);
  tokenizer.specials_ = std::make_shared<const SpecialTokenMatcher>(*tokenizer.vocab_);
  return tokenizer;
}

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
  return from_vocab(load_vocab(file.metadata()));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  const TextPiece piece{text, options.parse_special};
  return encode_pieces(std::span(&piece, 1), options.add_special);
}

std::vector<int32_t> Tokenizer::encode_pieces(std::span<const TextPiece> pieces,
                                              bool add_special) const {
  // Cut each piece at the special tokens its rule allows, then join neighbouring plain text:
  // the model sees the same runs of text it would see in the concatenated string. Invalid
  // UTF-8 is repaired first, so special tokens, pre-tokenizer and model all see one text.
  struct Run {
    std::string text;
    int32_t token = -1;  // >= 0: a matched special token
  };
  std::vector<Run> runs;
  size_t total = 0;
  for (const TextPiece& piece : pieces) {
    std::string repaired;
    std::string_view text = piece.text;
    if (!is_valid_utf8(text)) {
      repaired = sanitize_utf8(text);
      text = repaired;
    }
    total += text.size();
    for (const TextSegment& segment : specials_->split(text, piece.parse_special)) {
      if (segment.is_token()) {
        runs.push_back({{}, segment.token});
      } else if (!runs.empty() && runs.back().token < 0) {
        runs.back().text.append(segment.text);
      } else {
        runs.push_back({std::string(segment.text), -1});
      }
    }
  }

  std::vector<int32_t> ids;
  ids.reserve(total / 3 + 2);
  const SpecialTokens& special = vocab_->special;
  if (add_special && special.add_bos) ids.push_back(*special.bos);
  // SentencePiece's dummy prefix goes before the first plain segment and before any segment
  // that follows a matched token (llama.cpp's tokenize_impl; Hugging Face's legacy Llama
  // behaviour). Byte-level BPE ignores the flag.
  bool starts_text = true;
  for (const Run& run : runs) {
    if (run.token >= 0) {
      ids.push_back(run.token);
      starts_text = true;
    } else {
      model_->encode(run.text, starts_text, ids);
      starts_text = false;
    }
  }
  if (add_special && special.add_eos) ids.push_back(*special.eos);
  if (add_special && special.add_sep) ids.push_back(*special.separator);
  return ids;
}

std::vector<int32_t> Tokenizer::encode_continuation(std::string_view text) const {
  std::vector<int32_t> ids;
  if (!text.empty()) model_->encode(text, false, ids);
  return ids;
}

bool Tokenizer::is_special(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_->size()) {
    fail("token id {} is outside the {}-token vocabulary", id, vocab_->size());
  }
  TokenType type = vocab_->types[static_cast<size_t>(id)];
  return type == TokenType::Control || type == TokenType::Unknown;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= vocab_->size()) {
    fail("token id {} is outside the {}-token vocabulary", id, vocab_->size());
  }
  switch (vocab_->types[static_cast<size_t>(id)]) {
    // Added tokens read as their text in every algorithm (no byte map, no U+2581 undoing).
    case TokenType::Control:
    case TokenType::Unknown:
    case TokenType::UserDefined:
      return vocab_->tokens[static_cast<size_t>(id)];
    default:
      return model_->token_bytes(id);
  }
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, DecodeOptions options) const {
  std::string out;
  bool strip = options.strip_leading_space && strips_leading_space();
  for (int32_t id : ids) {
    if (options.skip_special && is_special(id)) continue;
    std::string bytes = token_bytes(id);
    if (strip && out.empty() && !bytes.empty()) {
      if (bytes.front() == ' ') bytes.erase(0, 1);
      strip = false;
    }
    out += bytes;
  }
  return out;
}

}  // namespace lumen::tokenizer
