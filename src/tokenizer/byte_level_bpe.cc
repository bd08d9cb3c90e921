#include "tokenizer/byte_level_bpe.h"

#include <array>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/byte_to_unicode.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/unicode_normalizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer/word_cache.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

// The bytes a byte-level token stands for. Like Hugging Face's ByteLevel decoder, a token with
// a code point outside GPT-2's byte map is taken as its literal UTF-8 text.
std::string byte_level_token_bytes(std::string_view text) {
  const ByteUnicodeMap& map = ByteUnicodeMap::get();
  std::string bytes;
  bytes.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    auto byte = map.decode(next_code_point(text, pos));
    if (!byte) return std::string(text);
    bytes += static_cast<char>(*byte);
  }
  return bytes;
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::string token_bytes_for(const Vocab& vocab, size_t id) {
  const std::string& text = vocab.tokens[id];
  switch (vocab.types[id]) {
    case TokenType::Control:
    case TokenType::UserDefined:
    case TokenType::Unknown:
    case TokenType::Unused:
      return text;  // added tokens are stored as they read, not byte-mapped
    case TokenType::Byte:
      if (text.size() == 6 && text.starts_with("<0x") && is_hex(text[3]) && is_hex(text[4])) {
        return std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
      }
      break;
    default: break;
  }
  return byte_level_token_bytes(text);
}

class ByteLevelBpe final : public TokenizerModel {
 public:
  explicit ByteLevelBpe(std::shared_ptr<const Vocab> vocab)
      : vocab_(std::move(vocab)),
        pre_(pre_tokenizer_spec(vocab_->pre_tokenizer)),
        index_(vocab_->tokens),
        merges_(vocab_->merges, index_) {
    const ByteUnicodeMap& map = ByteUnicodeMap::get();
    for (unsigned byte = 0; byte < 256; ++byte) {
      byte_token_[byte] = index_.find(map.encode(static_cast<uint8_t>(byte))).value_or(-1);
    }
    bytes_.reserve(vocab_->size());
    for (size_t id = 0; id < vocab_->size(); ++id) bytes_.push_back(token_bytes_for(*vocab_, id));
  }

  void encode(std::string_view text, bool /*starts_text*/, std::vector<int32_t>& out) const override {
    // Byte-level BPE has no dummy prefix, so where the text starts does not matter. Invalid
    // UTF-8 is read as U+FFFD first (Hugging Face sees Rust's lossy decoding), then normalized.
    std::string repaired;
    if (!is_valid_utf8(text)) {
      repaired = sanitize_utf8(text);
      text = repaired;
    }
    if (pre_.spec().nfc && !is_nfc_quick(text)) {
      encode_valid(to_nfc(text), out);
    } else {
      encode_valid(text, out);
    }
  }

  std::string token_bytes(int32_t id) const override {
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size()) {
      fail("token id {} is outside the {}-token vocabulary", id, bytes_.size());
    }
    return bytes_[static_cast<size_t>(id)];
  }

 private:
  // Per-call buffers: encode runs on many threads at once, so nothing is shared but the cache.
  struct Scratch {
    std::vector<std::string_view> words;
    std::string mapped;
    std::vector<int32_t> symbols;
    MergeScratch merge;
  };

  void encode_valid(std::string_view text, std::vector<int32_t>& out) const {
    Scratch scratch;
    pre_.split(text, scratch.words);
    for (std::string_view word : scratch.words) encode_word(word, scratch, out);
  }

  void encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const {
    if (cache_.lookup(word, out)) return;
    if (pre_.spec().ignore_merges) {
      scratch.mapped.clear();
      ByteUnicodeMap::get().encode(word, scratch.mapped);
      if (auto id = index_.find(scratch.mapped)) {
        out.push_back(*id);
        cache_.insert(word, &*id, 1);
        return;
      }
    }
    std::vector<int32_t>& symbols = scratch.symbols;
    symbols.clear();
    for (char c : word) {
      // A byte the vocabulary has no token for is dropped, as Hugging Face's BPE does when
      // the model has no unknown token (byte-level vocabularies have all 256).
      int32_t id = byte_token_[static_cast<uint8_t>(c)];
      if (id >= 0) symbols.push_back(id);
    }
    merges_.apply(symbols, scratch.merge);
    out.insert(out.end(), symbols.begin(), symbols.end());
    cache_.insert(word, symbols.data(), symbols.size());
  }

  std::shared_ptr<const Vocab> vocab_;
  PreTokenizer pre_;
  TokenIndex index_;
  BpeMerges merges_;
  std::array<int32_t, 256> byte_token_{};
  std::vector<std::string> bytes_;
  WordCache cache_;
};

}  // namespace

std::unique_ptr<TokenizerModel> make_byte_level_bpe(std::shared_ptr<const Vocab> vocab) {
  if (vocab->kind != VocabKind::BytePairGpt2) {
    fail("byte-level BPE needs a gpt2 vocabulary, not '{}'", vocab->model_name);
  }
  return std::make_unique<ByteLevelBpe>(std::move(vocab));
}

}  // namespace lumen::tokenizer
