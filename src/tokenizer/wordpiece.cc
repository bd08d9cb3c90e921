#include "tokenizer/wordpiece.h"

#include <utf8proc.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

constexpr size_t kMaxWordChars = 100;  // Hugging Face's max_input_chars_per_word
constexpr std::string_view kPhantomSpace = "\u2581";

utf8proc_category_t category(char32_t cp) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
}

// Rust's char::is_whitespace (the White_Space property), which Hugging Face's normaliser and
// pre-tokenizer both use.
bool is_whitespace(char32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r') || cp == 0x85) return true;
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool is_control(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CN ||
         c == UTF8PROC_CATEGORY_CO || c == UTF8PROC_CATEGORY_CS;
}

bool is_punctuation(char32_t cp) {
  if (cp < 0x80)
    return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  const utf8proc_category_t c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

// The CJK Unified Ideographs blocks, as BERT's _is_chinese_char lists them.
bool is_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B820 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// The code points of cp's canonical decomposition with the nonspacing marks left out, each
// lowercased: strip_accents then lowercase, Hugging Face's order.
void append_normalised(char32_t cp, std::u32string& out) {
  utf8proc_int32_t parts[16];
  int options = UTF8PROC_DECOMPOSE;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), parts, 16,
                                                     static_cast<utf8proc_option_t>(options), nullptr);
  if (n <= 0 || n > 16) {
    out += static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
    return;
  }
  for (utf8proc_ssize_t i = 0; i < n; ++i) {
    if (category(static_cast<char32_t>(parts[i])) == UTF8PROC_CATEGORY_MN) continue;
    out += static_cast<char32_t>(utf8proc_tolower(parts[i]));
  }
}

class WordPiece : public TokenizerModel {
 public:
  explicit WordPiece(std::shared_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {
    for (size_t id = 0; id < vocab_->size(); ++id) {
      const TokenType type = vocab_->types[id];
      if (type == TokenType::Control || type == TokenType::Unknown) continue;  // never a match for text
      pieces_.emplace(vocab_->tokens[id], static_cast<int32_t>(id));
    }
    unknown_ = vocab_->special.unknown;
    if (!unknown_) {
      for (size_t id = 0; id < vocab_->size() && !unknown_; ++id) {
        if (vocab_->tokens[id] == "[UNK]") unknown_ = static_cast<int32_t>(id);
      }
    }
    if (!unknown_) fail("this WordPiece vocabulary has no unknown token ([UNK] or tokenizer.ggml.unknown_token_id)");
  }

  void encode(std::string_view text, bool /*starts_text*/, std::vector<int32_t>& out) const override {
    for (const std::string& word : bert_words(text)) encode_word(word, out);
  }

  std::string token_bytes(int32_t id) const override {
    const std::string& piece = vocab_->tokens.at(static_cast<size_t>(id));
    const TokenType type = vocab_->types[static_cast<size_t>(id)];
    if (type == TokenType::Control || type == TokenType::Unknown || !piece.starts_with(kPhantomSpace)) return piece;
    std::string bytes = " ";
    bytes.append(piece, kPhantomSpace.size());
    return bytes;
  }

 private:
  void encode_word(const std::string& word, std::vector<int32_t>& out) const {
    // Character boundaries (byte offsets), so that matches end on whole characters.
    std::vector<size_t> ends;
    for (size_t pos = 0; pos < word.size();) {
      next_code_point(word, pos);
      ends.push_back(pos);
    }
    if (ends.size() > kMaxWordChars) {
      out.push_back(*unknown_);
      return;
    }
    const size_t mark = out.size();
    size_t start = 0, start_char = 0;
    std::string key;
    while (start < word.size()) {
      std::optional<int32_t> found;
      size_t end_char = ends.size();
      for (; end_char > start_char; --end_char) {
        key.assign(start == 0 ? kPhantomSpace : std::string_view{});
        key.append(word, start, ends[end_char - 1] - start);
        if (auto it = pieces_.find(key); it != pieces_.end()) {
          found = it->second;
          break;
        }
      }
      if (!found) {  // no piece fits the rest: the whole word is unknown
        out.resize(mark);
        out.push_back(*unknown_);
        return;
      }
      out.push_back(*found);
      start = ends[end_char - 1];
      start_char = end_char;
    }
  }

  std::shared_ptr<const Vocab> vocab_;
  std::unordered_map<std::string, int32_t> pieces_;
  std::optional<int32_t> unknown_;
};

}  // namespace

std::vector<std::string> bert_words(std::string_view text) {
  std::u32string normalised;
  for (size_t pos = 0; pos < text.size();) {
    const char32_t cp = next_code_point(text, pos);
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) continue;
    if (is_whitespace(cp)) {
      normalised += U' ';
    } else if (is_cjk(cp)) {
      normalised += U' ';
      normalised += cp;
      normalised += U' ';
    } else {
      append_normalised(cp, normalised);
    }
  }
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t cp : normalised) {
    if (is_whitespace(cp)) {
      flush();
    } else if (is_punctuation(cp)) {
      flush();
      words.push_back(to_utf8(cp));
    } else {
      append_utf8(word, cp);
    }
  }
  flush();
  return words;
}

std::unique_ptr<TokenizerModel> make_wordpiece(std::shared_ptr<const Vocab> vocab) {
  return std::make_unique<WordPiece>(std::move(vocab));
}

}  // namespace lumen::tokenizer
