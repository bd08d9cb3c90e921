#pragma once
// Byte-level BPE pre-tokenizers: how text is cut into words before merges run, chosen by the
// GGUF's tokenizer.ggml.pre. Each is a sequence of regex splits, exactly as the model's Hugging
// Face tokenizer.json lists them (llama.cpp's src/llama-vocab.cpp maps the GGUF names to the
// same patterns); every split keeps both the matches and the text between them.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/unicode_regex.h"

namespace lumen::tokenizer {

struct PreTokenizerSpec {
  std::string name;                   // the canonical name, e.g. "llama-bpe"
  std::vector<std::string> patterns;  // applied in order, each to every piece of the last
  // Llama 3's tokenizer.json sets "ignore_merges": a word that is itself a token is that token,
  // whatever the merges would have made of it.
  bool ignore_merges = false;
  // Qwen 2's tokenizer.json has an NFC normalizer, which runs on the plain text before these
  // splits ("e" + U+0301 becomes "é"). llama.cpp leaves this out; Lumen follows Hugging Face.
  bool nfc = false;
};

// The spec for a tokenizer.ggml.pre value; "" (absent) and "default" give llama.cpp's default.
// Throws lumen::Error naming the value when Lumen does not know it, rather than guess.
PreTokenizerSpec pre_tokenizer_spec(std::string_view gguf_name);

// The names pre_tokenizer_spec accepts, for error messages and docs.
std::vector<std::string_view> known_pre_tokenizers();

class PreTokenizer {
 public:
  explicit PreTokenizer(const PreTokenizerSpec& spec);

  const PreTokenizerSpec& spec() const { return spec_; }

  // Cuts valid UTF-8 `text` (normalized already where the spec says so) into words (views into
  // `text`, in order, covering all of it).
  void split(std::string_view text, std::vector<std::string_view>& words) const;

 private:
  PreTokenizerSpec spec_;
  std::vector<UnicodeRegex> regexes_;
};

}  // namespace lumen::tokenizer
